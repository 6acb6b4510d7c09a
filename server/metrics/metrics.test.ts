import { describe, expect, it } from "vitest";
import { createMetrics } from "./metrics.ts";

describe("metrics", () => {
  it("serves every other metric when the outbox's counts cannot be read (PostgreSQL away), and that one empty", async () => {
    let down = true;
    const metrics = createMetrics({
      outbox: () =>
        down ? Promise.reject(new Error("Can't reach database server")) : Promise.resolve({ pending: 3, parked: 1 }),
      sockets: () => 2,
      sendsWaiting: () => 7,
      rebuildsWaiting: () => 0,
    });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^tally_sends_waiting 7$/m);
    expect(text).toMatch(/^tally_connected_sockets 2$/m);
    expect(text).not.toMatch(/^tally_outbox_entries\{/m);

    down = false;
    const back = await metrics.registry.metrics();
    expect(back).toMatch(/^tally_outbox_entries\{state="pending"\} 3$/m);
    expect(back).toMatch(/^tally_outbox_entries\{state="parked"\} 1$/m);
  });
});
