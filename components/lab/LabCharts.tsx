"use client";

import { memo, useLayoutEffect, useMemo, useRef, useState } from "react";
import {
  CartesianGrid,
  Legend,
  Line,
  LineChart,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
  type DotItemDotProps,
  type LegendPayload,
} from "recharts";
import type { LabSample, LabStrategyName } from "@/server/contracts";
import { STRATEGY_COLORS, STRATEGY_SHORT_LABELS } from "./colors";
import { useLabStore } from "./LabProvider";
import { chartRows, sharedTimeAxis, STRATEGY_NAMES } from "./store";

interface ChartProps {
  title: string;
  testId: string;
  samples: Record<LabStrategyName, LabSample[]>;
  value: (s: LabSample) => number;
  axis: ReturnType<typeof sharedTimeAxis>;
}

/** Memoized: drawn again only when its samples (at most every REDRAW_EVERY_MS) or strategies change. */
const Chart = memo(function Chart({ title, testId, samples, value, axis }: ChartProps) {
  const strategies = useLabStore((s) => s.run?.strategies ?? s.strategies);
  const rows = useMemo(() => chartRows(samples, value), [samples, value]);
  const ends = useMemo(() => lastTimes(rows), [rows]);
  return (
    <figure className="lab-chart" data-testid={testId}>
      <figcaption>{title}</figcaption>
      <ResponsiveContainer width="100%" height={240}>
        <LineChart data={rows} margin={{ top: 8, right: 16, bottom: 4, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" opacity={0.4} />
          <XAxis dataKey="t" type="number" domain={axis.domain} ticks={axis.ticks} unit=" s" allowDataOverflow />
          {/* Lifted off the time axis: a strategy at 0 (Lua's drift) draws a line of its own, not the axis. */}
          <YAxis allowDecimals={false} width={56} padding={{ bottom: ZERO_LIFT_PX }} />
          <Tooltip />
          {/* In the strategies' order, as the form and the table list them (Recharts sorts by label otherwise). */}
          <Legend itemSorter={legendOrder} />
          {STRATEGY_NAMES.filter((name) => strategies.includes(name)).map((name) => (
            <Line
              key={name}
              type="monotone"
              dataKey={name}
              className={`lab-line-${name}`}
              name={STRATEGY_SHORT_LABELS[name]}
              stroke={STRATEGY_COLORS[name]}
              strokeWidth={2}
              dot={(p: DotItemDotProps) =>
                p.payload?.t === ends[name] && p.cx != null && p.cy != null ? (
                  <circle className="lab-line-end" cx={p.cx} cy={p.cy} r={3.5} fill={STRATEGY_COLORS[name]} />
                ) : null
              }
              connectNulls
              isAnimationActive={false}
            />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </figure>
  );
});

const ZERO_LIFT_PX = 8;

const legendOrder = (item: LegendPayload) => STRATEGY_NAMES.indexOf(item.dataKey as LabStrategyName);

/**
 * Each strategy's newest point, where its line ends in a dot: its end-of-run value once it finished (the value
 * the results table reports), and a strategy of a single point still shows.
 */
function lastTimes(rows: ReturnType<typeof chartRows>): Partial<Record<LabStrategyName, number>> {
  const ends: Partial<Record<LabStrategyName, number>> = {};
  for (const row of rows) for (const name of STRATEGY_NAMES) if (row[name] !== undefined) ends[name] = row.t;
  return ends;
}

/**
 * How often, at most, the charts are drawn again while samples come (a sample every 250 ms). Recharts redraws both
 * charts whole for each one, and did for every render of this page: a lab tab spent 75% of a core on a run (6.0 s of
 * task time in 8 s, build machine), and a workshop's watching tabs, or four tabs on two cores, starved each other.
 * Drawn once a second, and only when the samples change: 45% (3.6 s in 8 s), of which 19% without any redraw.
 */
const REDRAW_EVERY_MS = 1000;

/**
 * `value`, changed at most once every `ms`: a change within that time is shown when it is up (the newest one then,
 * so a run's last sample is never left out); with `ms` 0, `value` itself in the same render. React has no throttle
 * of its own (useDeferredValue only yields).
 */
function useAtMostEvery<T>(value: T, ms: number): T {
  const [shown, setShown] = useState(value);
  const lastShown = useRef(0);
  // Before the paint: a change shown at once never paints the one before it (a new run's first lines over the
  // last run's).
  useLayoutEffect(() => {
    const show = () => {
      // Not live (0): the next live change, a run taken up, shows at once.
      lastShown.current = ms === 0 ? -Infinity : performance.now();
      setShown(value);
    };
    const wait = lastShown.current + ms - performance.now();
    if (wait <= 0) {
      show();
      return;
    }
    const timer = setTimeout(show, wait);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return ms === 0 ? value : shown;
}

const opsPerSec = (s: LabSample) => s.opsPerSec;
const driftUsers = (s: LabSample) => s.drift.users;

/**
 * Throughput and drift per strategy, over seconds since each strategy started (they run one after another), on
 * one time axis shared by every line of both charts.
 */
export function LabCharts() {
  // Live (this page's run, or one it watches): at most every REDRAW_EVERY_MS; otherwise at once, so a run's end
  // is drawn with its results.
  const live = useLabStore((s) => s.status === "running" || s.status === "watching");
  const samples = useAtMostEvery(
    useLabStore((s) => s.samples),
    live ? REDRAW_EVERY_MS : 0,
  );
  const axis = useMemo(() => sharedTimeAxis(samples), [samples]);
  return (
    <div className="lab-charts">
      <Chart
        title="Throughput (operations/s)"
        testId="lab-chart-throughput"
        samples={samples}
        value={opsPerSec}
        axis={axis}
      />
      <Chart
        title="Drift sampled live (users whose badge ≠ sum of list)"
        testId="lab-chart-drift"
        samples={samples}
        value={driftUsers}
        axis={axis}
      />
      <p className="lab-hint lab-charts-axis" data-testid="lab-chart-axis">
        Both charts: seconds since each strategy started, on one shared axis (0–{axis.domain[1]} s). The strategies run
        one after another, so a shorter line finished sooner.
      </p>
      <p className="lab-hint lab-charts-axis" data-testid="lab-chart-live">
        The drift chart samples live, operations in flight included: the lock can show drift between an operation&apos;s
        two writes that is gone once it ends. The results table reports drift at the end.
      </p>
    </div>
  );
}
