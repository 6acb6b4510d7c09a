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

  it("believes X-Forwarded-For only from the listed proxies when TRUST_PROXY lists them", () => {
    const forwarded = { "x-forwarded-for": "198.51.100.2" };
    const proxies = ["10.0.0.0/24", "192.0.2.7", "fd00::/8"];
    expect(clientAddress(request(forwarded, "10.0.0.9"), proxies)).toBe("198.51.100.2");
    expect(clientAddress(request(forwarded, "192.0.2.7"), proxies)).toBe("198.51.100.2");
    expect(clientAddress(request(forwarded, "::ffff:10.0.0.200"), proxies)).toBe("198.51.100.2");
    expect(clientAddress(request(forwarded, "fd12::1"), proxies)).toBe("198.51.100.2");
    // A client that reaches the instance directly does not choose its own address.
    expect(clientAddress(request(forwarded, "203.0.113.50"), proxies)).toBe("203.0.113.50");
    expect(clientAddress(request(forwarded, "192.0.2.8"), proxies)).toBe("192.0.2.8");
    // Nor its scheme, for the origin check.
    const https = { origin: "https://chat.example", host: "chat.example", "x-forwarded-proto": "https" };
    expect(originAllowed(request(https, "10.0.0.9"), undefined, proxies)).toBe(true);
    expect(originAllowed(request({ ...https, origin: "http://chat.example" }, "10.0.0.9"), undefined, proxies)).toBe(
      false,
    );
    expect(
      originAllowed(request({ ...https, origin: "http://chat.example" }, "203.0.113.50"), undefined, proxies),
    ).toBe(true);
  });
});
