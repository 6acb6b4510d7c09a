/** cluster-key-slot (ioredis' own dependency) ships no types. */
declare module "cluster-key-slot" {
  /** The Redis Cluster hash slot (0…16383) of a key, honouring its `{hash tag}`. */
  export default function calculateSlot(key: string | Buffer): number;
}
