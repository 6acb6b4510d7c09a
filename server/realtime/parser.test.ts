import { Encoder, PacketType } from "socket.io-parser";
import { describe, expect, it } from "vitest";
import { textOnlyParser } from "./parser.ts";

/** What a Socket.IO client writes for `packet`: its text part, then any binary attachments. */
const framesOf = (packet: { type: PacketType; nsp: string; data: unknown[]; id?: number }) =>
  new Encoder().encode(packet) as (string | Buffer)[];

describe("the text-only parser", () => {
  it("decodes JSON events and acknowledgements as Socket.IO's own decoder does", () => {
    const decoder = new textOnlyParser.Decoder();
    const decoded: unknown[] = [];
    decoder.on("decoded", (packet) => decoded.push(packet));
    const [event] = framesOf({ type: PacketType.EVENT, nsp: "/", data: ["sync", { limit: 5 }], id: 7 });
    decoder.add(event);
    expect(decoded).toEqual([{ type: PacketType.EVENT, nsp: "/", data: ["sync", { limit: 5 }], id: 7 }]);
  });

  it("refuses a binary event, a binary acknowledgement and a binary frame", () => {
    const binary = framesOf({ type: PacketType.EVENT, nsp: "/", data: ["sync", Buffer.alloc(900_000)], id: 1 });
    expect(binary).toHaveLength(2);
    expect(() => new textOnlyParser.Decoder().add(binary[0])).toThrow(/Binary packets/);
    const ack = framesOf({ type: PacketType.ACK, nsp: "/", data: [Buffer.from("x")], id: 1 });
    expect(() => new textOnlyParser.Decoder().add(ack[0])).toThrow(/Binary packets/);
    expect(() => new textOnlyParser.Decoder().add(binary[1])).toThrow(/Binary frames/);
  });
});
