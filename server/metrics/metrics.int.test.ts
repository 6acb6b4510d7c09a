import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userKeys } from "../redis/keys.ts";
import { startHarness, type Harness } from "../testing/harness.ts";

/** GET /metrics of instance `i`, as text. */
async function scrape(h: Harness, i = 0, headers: Record<string, string> = {}) {
  const res = await fetch(`${h.instances[i]!.url}/metrics`, { headers });
  return { status: res.status, text: await res.text() };
}

/** The value of one sample line, e.g. `tally_commands_total{command="message:send",outcome="ok"}`; 0 if absent. */
function sample(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe("/metrics", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(1);
  });
  afterAll(() => h.close());

  it("counts commands by outcome, times each stage of a send, sizes its groups, and counts sockets and the outbox", async () => {
    const [ann, ben] = [await h.signUp(`ann_${Date.now()}`), await h.signUp(`ben_${Date.now()}`)];
    const created = await h.http("/api/conversations", {
      method: "POST",
      token: ann.token,
      body: JSON.stringify({ memberNames: [ben.user.name] }),
    });
    const conversationId = created.body.conversation.id as number;
    const socket = await h.connect(ann.token);
    const before = (await scrape(h)).text;
    for (let i = 0; i < 3; i++)
      expect(
        await socket.emitWithAck("message:send", { conversationId, clientMsgId: randomUUID(), content: `hi ${i}` }),
      ).toMatchObject({ ok: true });
    expect(await socket.emitWithAck("message:send", { conversationId, clientMsgId: "x", content: "" })).toMatchObject({
      ok: false,
      error: { code: "invalid" },
    });
    expect(await socket.emitWithAck("conversation:read", { conversationId: 999_999, seq: 1 })).toMatchObject({
      ok: false,
      error: { code: "forbidden" },
    });

    expect(await socket.emitWithAck("sync")).toMatchObject({ ok: true });
    // A call with a second payload is refused before it runs, and still counted.
    const raw = socket as unknown as { emitWithAck(event: string, ...args: unknown[]): Promise<unknown> };
    expect(await raw.emitWithAck("sync", {}, {})).toMatchObject({ ok: false, error: { code: "invalid" } });

    const { status, text } = await scrape(h);
    expect(status).toBe(200);
    const delta = (series: string) => sample(text, series) - sample(before, series);
    expect(delta('tally_commands_total{command="message:send",outcome="ok"}')).toBe(3);
    expect(delta('tally_commands_total{command="message:send",outcome="invalid"}')).toBe(1);
    expect(delta('tally_commands_total{command="conversation:read",outcome="forbidden"}')).toBe(1);
    expect(delta('tally_commands_total{command="sync",outcome="invalid"}')).toBe(1);
    // One timing of each stage per send (the push: one delivery of the message with the counts it changed).
    for (const stage of ["commit", "counters", "push"])
      expect(delta(`tally_send_stage_seconds_count{stage="${stage}"}`)).toBe(3);
    // Each send waited for the one before, so each went to the database in a group of its own.
    expect([delta("tally_send_group_size_count"), delta("tally_send_group_size_sum")]).toEqual([3, 3]);
    expect(delta('tally_send_group_size_bucket{le="1"}')).toBe(3);
    // One snapshot, read side by side or (had ann's counts moved during it) one after the other.
    const reads = ["side_by_side", "sequential"].map((order) => delta(`tally_sync_reads_total{order="${order}"}`));
    expect(reads[0]! + reads[1]!).toBe(1);
    expect(sample(text, "tally_connected_sockets")).toBe(1);
    expect(sample(text, "tally_sends_waiting")).toBe(0); // every send was answered
    // Each send's entry is completed once its counters are applied, by the next send's statement or, with no send
    // after it, by a statement of its own a moment later (outbox.completeSoon): pending drains to 0.
    await expect
      .poll(async () => sample((await scrape(h)).text, 'tally_outbox_entries{state="pending"}'), { timeout: 5_000 })
      .toBe(0);
    expect(text).toContain("process_cpu_seconds_total");
    socket.disconnect();
  });

  it("counts each rebuild's read of the database, and the rebuilds waiting for a turn", async () => {
    const ann = await h.signUp(`ann_${Date.now()}`);
    const socket = await h.connect(ann.token);
    expect(await socket.emitWithAck("sync")).toMatchObject({ ok: true });
    const before = (await scrape(h)).text;
    await h.redis.del(...Object.values(userKeys(ann.user.id))); // Redis lost ann's state: the next sync rebuilds it
    expect(await socket.emitWithAck("sync")).toMatchObject({ ok: true });
    expect(await socket.emitWithAck("sync")).toMatchObject({ ok: true }); // and the one after finds it
    const { text } = await scrape(h);
    const delta = (series: string) => sample(text, series) - sample(before, series);
    expect(delta('tally_rebuilds_total{how="read"}')).toBe(1);
    expect(delta('tally_rebuilds_total{how="joined"}')).toBe(0);
    expect(text).toContain("# TYPE tally_rebuilds_waiting gauge");
    expect(sample(text, "tally_rebuilds_waiting")).toBe(0);
    socket.disconnect();
  });

  it("answers only an unproxied scraper on this machine: a request through a proxy gets 404", async () => {
    expect((await scrape(h, 0, { "x-forwarded-for": "203.0.113.7" })).status).toBe(404);
    expect((await scrape(h)).status).toBe(200);
  });

  it("answers HEAD as GET without a body, OPTIONS with 204 and other methods with 405, each with Allow", async () => {
    const url = `${h.instances[0]!.url}/metrics`;
    const head = await fetch(url, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(await head.text()).toBe("");
    const options = await fetch(url, { method: "OPTIONS" });
    expect([options.status, options.headers.get("allow")]).toEqual([204, "GET, HEAD, OPTIONS"]);
    const post = await fetch(url, { method: "POST" });
    expect([post.status, post.headers.get("allow")]).toEqual([405, "GET, HEAD, OPTIONS"]);
    expect(await post.json()).toEqual({
      ok: false,
      error: { code: "method_not_allowed", message: "POST is not allowed here." },
    });
    // Through a proxy it is still as if there were no such route, whatever the method.
    const proxied = await fetch(url, { method: "OPTIONS", headers: { "x-forwarded-for": "203.0.113.7" } });
    expect(proxied.status).toBe(404);
  });
});

describe("/metrics with METRICS_TOKEN", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(1, { metricsToken: "a-long-enough-scrape-token" });
  });
  afterAll(() => h.close());

  it("asks for the bearer token, even on loopback", async () => {
    expect((await scrape(h)).status).toBe(404);
    expect((await scrape(h, 0, { authorization: "Bearer wrong-token-of-some-length" })).status).toBe(404);
    const ok = await scrape(h, 0, { authorization: "Bearer a-long-enough-scrape-token" });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain("tally_commands_total");
  });
});
