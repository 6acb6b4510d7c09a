import { Decoder, Encoder, PacketType } from "socket.io-parser";

/**
 * The largest frame a client may send, in bytes: a message of 4000 characters is at most ~24 kB of JSON (every
 * character escaped), and nothing else a client sends comes close. Larger frames close the connection
 * (Engine.IO's `maxHttpBufferSize`; its default, 1 MB, let one frame cost a megabyte of parsing).
 */
export const MAX_FRAME_BYTES = 64 * 1024;

/**
 * Socket.IO's decoder, refusing binary packets. Tally's clients send JSON only; with a Buffer as its payload a
 * command's validation saw an object with a key per byte, so a 900 kB frame cost ~0.5 s of one core and an 8.9 MB
 * answer. A binary packet (or a binary frame) throws here, and Socket.IO closes that connection, as it does any
 * packet it cannot decode.
 */
class TextOnlyDecoder extends Decoder {
  override add(obj: unknown): void {
    if (typeof obj !== "string") throw new Error("Binary frames are not accepted.");
    const type = Number(obj.charAt(0));
    if (type === PacketType.BINARY_EVENT || type === PacketType.BINARY_ACK) {
      throw new Error("Binary packets are not accepted.");
    }
    super.add(obj);
  }
}

/** The `parser` option of Tally's Socket.IO server: the stock encoder, and a decoder that takes text only. */
export const textOnlyParser = { Encoder, Decoder: TextOnlyDecoder };
