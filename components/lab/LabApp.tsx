"use client";

import { useEffect, useRef } from "react";
import { TallyMark } from "@/components/chat/TallyMark";
import { sessionEndedText } from "@/components/lib/session-ended";
import { describeRunSettings } from "./explain";
import { LabBadges } from "./LabBadges";
import { LabBots } from "./LabBots";
import { LabCharts } from "./LabCharts";
import { LabForm } from "./LabForm";
import { LabGlossary } from "./LabGlossary";
import { LabProvider, useLabStore } from "./LabProvider";
import { LabResults } from "./LabResults";
import { LabStoryMode } from "./LabStory";

/** Over the charts of someone else's run: what it runs (the form above is the page's own). */
function WatchedRun() {
  const run = useLabStore((s) => (s.watching ? s.run : null));
  if (!run) return null;
  return (
    <p className="lab-notice" data-testid="lab-watched">
      Someone else&apos;s run: {describeRunSettings(run.strategies, run.workload)}
    </p>
  );
}

function Body() {
  const connection = useLabStore((s) => s.connection);
  const ended = useLabStore((s) => s.ended);
  const status = useLabStore((s) => s.status);
  const live = useRef<HTMLDivElement>(null);
  const previous = useRef(status);

  // Run pressed in this tab and taken by the server: the charts come into view just under the run bar (lab.css
  // gives .lab-live its scroll margin), so a presenter sees the run start; at 1280×720 they begin below the fold.
  useEffect(() => {
    if (previous.current === "starting" && status !== "failed") live.current?.scrollIntoView({ block: "start" });
    previous.current = status;
  }, [status]);

  if (connection === "disabled") {
    return (
      <main className="lab-main">
        <p className="lab-lead" data-testid="lab-disabled">
          The consistency lab is turned off on this server (LAB=0). <a href="/">Back to the chat</a>
        </p>
      </main>
    );
  }
  if (connection === "signedOut") {
    return (
      <main className="lab-main">
        {ended && (
          <p className="lab-lead" role="status" data-testid="lab-session-ended">
            {sessionEndedText(ended.reason)}
          </p>
        )}
        <p className="lab-lead" data-testid="lab-signed-out">
          The lab is open to any signed-in user. <a href="/?next=/lab">Sign in</a> and you come back here.
        </p>
      </main>
    );
  }
  return (
    <main className="lab-main" aria-busy={connection === "connecting"}>
      <section className="lab-section lab-run-section" aria-labelledby="lab-run-title">
        <h2 id="lab-run-title">Compare the strategies</h2>
        <p className="lab-lead">
          The same seeded workload runs against each strategy in turn, on a redis-server of the lab&apos;s own: naive
          two-step writes, a per-user lock, WATCH/MULTI and Tally&apos;s Lua scripts. Drift is a badge that disagrees
          with the sum of the list.
        </p>
        <p className="lab-lead" data-testid="lab-start-here">
          First time here? Pick the fault &ldquo;Crash between the writes&rdquo; and press <strong>Run</strong>: the
          naive strategy&apos;s badges drift from their lists, and Lua&apos;s never do. The story mode below the results
          walks through why, one step at a time.
        </p>
        <LabGlossary />
        <LabForm />
        <div className="lab-live" data-testid="lab-live" ref={live}>
          <WatchedRun />
          <LabCharts />
          <LabBadges />
        </div>
      </section>
      <LabResults />
      <LabStoryMode />
      <LabBots />
    </main>
  );
}

export function LabApp() {
  return (
    <LabProvider>
      <div className="lab">
        <header className="topbar lab-topbar" data-testid="lab-header">
          <div className="brand">
            <TallyMark />
            <h1 className="brand-name">Tally · Consistency lab</h1>
          </div>
          <a className="link lab-back" href="/" aria-label="Back to the chat">
            <span className="lab-back-long">Back to the chat</span>
            <span className="lab-back-short" aria-hidden="true">
              ← Chat
            </span>
          </a>
        </header>
        <Body />
      </div>
    </LabProvider>
  );
}
