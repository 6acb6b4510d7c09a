"use client";

import { useMemo } from "react";
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { LabSample } from "@/server/contracts";
import { STRATEGY_COLORS, STRATEGY_LABELS } from "./colors";
import { useLabStore } from "./LabProvider";
import { chartRows, STRATEGY_NAMES } from "./store";

function Chart({ title, testId, value }: { title: string; testId: string; value: (s: LabSample) => number }) {
  const samples = useLabStore((s) => s.samples);
  const strategies = useLabStore((s) => s.run?.strategies ?? s.strategies);
  const rows = useMemo(() => chartRows(samples, value), [samples, value]);
  return (
    <figure className="lab-chart" data-testid={testId}>
      <figcaption>{title}</figcaption>
      <ResponsiveContainer width="100%" height={240}>
        <LineChart data={rows} margin={{ top: 8, right: 16, bottom: 4, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" opacity={0.4} />
          <XAxis dataKey="t" type="number" domain={[0, "dataMax"]} unit=" s" tickCount={6} />
          <YAxis allowDecimals={false} width={56} />
          <Tooltip />
          <Legend />
          {STRATEGY_NAMES.filter((name) => strategies.includes(name)).map((name) => (
            <Line
              key={name}
              type="monotone"
              dataKey={name}
              name={STRATEGY_LABELS[name]}
              stroke={STRATEGY_COLORS[name]}
              strokeWidth={2}
              dot={false}
              connectNulls
              isAnimationActive={false}
            />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </figure>
  );
}

const opsPerSec = (s: LabSample) => s.opsPerSec;
const driftUsers = (s: LabSample) => s.drift.users;

/** Throughput and drift per strategy, over seconds since each strategy started (they run one after another). */
export function LabCharts() {
  return (
    <div className="lab-charts">
      <Chart title="Throughput (operations/s)" testId="lab-chart-throughput" value={opsPerSec} />
      <Chart title="Drift (users whose badge ≠ the sum of their list)" testId="lab-chart-drift" value={driftUsers} />
    </div>
  );
}
