import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { clientAddress, originAllowed } from "./origin.ts";

/** A request as the checks read it: its headers and its peer. */
function request(headers: Record<string, string | string[]>, remoteAddress = "10.0.0.9"): IncomingMessage {
  return { headers, socket: { remoteAddress } } as unknown as IncomingMessage;
}

describe("originAllowed without an allow-list", () => {
  it("takes the origin the request was addressed to, over http or https, and nothing else", () => {
    const own = { host: "chat.example" };
    expect(originAllowed(request({ ...own, origin: "http://chat.example" }), undefined)).toBe(true);
    expect(originAllowed(request({ ...own, origin: "https://chat.example" }), undefined)).toBe(true);
    expect(originAllowed(request({ ...own, origin: "https://evil.example" }), undefined)).toBe(false);
    expect(originAllowed(request({ ...own, origin: "ftp://chat.example" }), undefined)).toBe(false);
    expect(originAllowed(request({ ...own, origin: "null" }), undefined)).toBe(false);
    // No Origin: not a cross-site browser request, unless the browser says it is.
    expect(originAllowed(request(own), undefined)).toBe(true);
    expect(originAllowed(request({ ...own, "sec-fetch-site": "cross-site" }), undefined)).toBe(false);
  });

  it("behind a trusted proxy that names the scheme, takes only that scheme: http://host cannot act on https://host", () => {
    const behindTls = { host: "chat.example", "x-forwarded-proto": "https" };
    expect(originAllowed(request({ ...behindTls, origin: "https://chat.example" }), undefined, true)).toBe(true);
    expect(originAllowed(request({ ...behindTls, origin: "http://chat.example" }), undefined, true)).toBe(false);
    // The nearest proxy's word counts (the last of a list), in any letter case.
    const chained = { host: "chat.example", "x-forwarded-proto": "http, HTTPS" };
    expect(originAllowed(request({ ...chained, origin: "https://chat.example" }), undefined, true)).toBe(true);
    expect(originAllowed(request({ ...chained, origin: "http://chat.example" }), undefined, true)).toBe(false);
    // Not trusted, the header is anyone's: the scheme is not checked (set ALLOWED_ORIGINS behind TLS).
    expect(originAllowed(request({ ...behindTls, origin: "http://chat.example" }), undefined, false)).toBe(true);
  });
});

describe("clientAddress", () => {
  it("is the peer, or behind a trusted proxy the last X-Forwarded-For hop", () => {
    const forwarded = { "x-forwarded-for": "203.0.113.1, 198.51.100.2" };
    expect(clientAddress(request(forwarded), false)).toBe("10.0.0.9");
    expect(clientAddress(request(forwarded), true)).toBe("198.51.100.2");
    expect(clientAddress(request({ "x-forwarded-for": ["203.0.113.1", "198.51.100.3"] }), true)).toBe("198.51.100.3");
    expect(clientAddress(request({ "x-forwarded-for": " " }), true)).toBe("10.0.0.9");
  });
});
