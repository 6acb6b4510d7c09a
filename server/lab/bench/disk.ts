import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { percentile, round } from "../measure.ts";

/**
 * The disk's own flush, with no database in the way: what every durable commit waits for. A commit's latency can
 * only be as steady as this; on the virtual disks measured (docs/benchmarks.md, "A fifteenth look") a flush now and
 * then takes 100–300 ms, and the sends waiting on that commit take as long.
 */
export interface DiskFlushResult {
  flushes: number;
  gapMs: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  over50Ms: number;
  over100Ms: number;
}

/** What the flush times (ms) say, sorted or not. */
export function summariseFlushes(times: readonly number[], gapMs: number): DiskFlushResult {
  const sorted = [...times].sort((a, b) => a - b);
  return {
    flushes: sorted.length,
    gapMs,
    p50Ms: round(percentile(sorted, 50), 3),
    p99Ms: round(percentile(sorted, 99), 3),
    p999Ms: round(percentile(sorted, 99.9), 3),
    maxMs: round(sorted.at(-1) ?? 0, 3),
    over50Ms: sorted.filter((t) => t > 50).length,
    over100Ms: sorted.filter((t) => t > 100).length,
  };
}

/**
 * For `seconds`, writes 8 kB (a WAL page) and flushes it (`fdatasync`, PostgreSQL's default `wal_sync_method` on
 * Linux), `gapMs` after the flush before, in a temp directory on the disk `dir` is on (the bench's data directories
 * are under the system's temp directory); times each flush. Synchronous: the bench runs it with nothing else going.
 */
export async function measureDiskFlush(opts: {
  seconds: number;
  gapMs: number;
  dir?: string;
}): Promise<DiskFlushResult> {
  const dir = mkdtempSync(path.join(opts.dir ?? tmpdir(), "tally-bench-disk-"));
  const fd = openSync(path.join(dir, "flush"), "w");
  const page = Buffer.alloc(8192, 1);
  const times: number[] = [];
  try {
    const end = performance.now() + opts.seconds * 1000;
    for (let i = 0; performance.now() < end; i++) {
      writeSync(fd, page, 0, page.length, (i % 64) * page.length);
      const start = process.hrtime.bigint();
      fdatasyncSync(fd);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
      await sleep(opts.gapMs);
    }
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  return summariseFlushes(times, opts.gapMs);
}
