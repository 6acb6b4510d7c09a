"use client";

import { useEffect, useRef } from "react";
import type { LabStory } from "@/server/contracts";
import { STRATEGY_COLORS, STRATEGY_LABELS } from "./colors";
import { useLabStore } from "./LabProvider";
import { storyInView, storyStepForKey } from "./story-keys";
import { changedColumns } from "./story-view";

const VERDICTS: Record<LabStory["verdict"], string> = {
  correct: "badge = list = truth",
  drift: "badge ≠ list",
  wrong: "badge = list ≠ truth",
};

/** With the conversation muted, "the list" the badge must equal leaves out its (greyed) count. */
const MUTED_VERDICTS: Record<LabStory["verdict"], string> = {
  correct: "badge = unmuted list = truth",
  drift: "badge counts a muted conversation",
  wrong: "badge = unmuted list ≠ truth",
};

function Timeline({ story, step }: { story: LabStory; step: number }) {
  const shown = story.steps.slice(0, step);
  const last = shown.at(-1);
  const done = step >= story.steps.length;
  return (
    <div
      className="lab-story-column"
      data-testid="lab-story-column"
      data-strategy={story.strategy}
      data-steps={story.steps.length}
    >
      {/* Sticky under the steps bar: the column's name and its figures stay in view however long it grows. */}
      <div className="lab-story-head" data-testid="lab-story-head">
        <h3 style={{ borderColor: STRATEGY_COLORS[story.strategy] }}>{STRATEGY_LABELS[story.strategy]}</h3>
        <div className="lab-story-now" aria-live="polite">
          <span>
            list <b data-testid="lab-story-list">{last?.list ?? 0}</b>
            {last?.muted && (
              <span className="lab-story-muted" data-testid="lab-story-muted">
                {" "}
                (muted)
              </span>
            )}
          </span>
          <span>
            badge <b data-testid="lab-story-badge">{last?.badge ?? 0}</b>
          </span>
        </div>
      </div>
      <ol className="lab-timeline">
        {shown.map((s, i) => (
          <li
            key={i}
            data-testid="lab-story-step"
            data-actor={s.actor}
            className={i === shown.length - 1 ? "current" : ""}
            data-current={i === shown.length - 1 && !done ? "" : undefined}
          >
            <span className="lab-actor">{s.actor}</span>
            <span className="lab-action">{s.action}</span>
            <span className="lab-state">
              list {s.list}
              {s.muted ? " (muted)" : ""} · badge {s.badge}
            </span>
          </li>
        ))}
      </ol>
      {done && (
        <p className={`lab-verdict lab-verdict-${story.verdict}`} data-testid="lab-story-verdict" data-current="">
          <b>{(story.scenario === "mute" ? MUTED_VERDICTS : VERDICTS)[story.verdict]}</b> (truth: list {story.truth}
          {story.truthBadge !== story.truth ? `, badge ${story.truthBadge}` : ""}). {story.summary}
        </p>
      )}
    </div>
  );
}

/** The stories a presenter can replay, as the buttons name them. */
const STORIES = [
  ["race", "A read races a send"],
  ["crash", "A crash between the writes"],
  ["mute", "A mute races a send"],
] as const;

/** Story mode: the classic interleavings replayed on real Redis, one step at a time, for each strategy. */
export function LabStoryMode() {
  const story = useLabStore((s) => s.story);
  const loadStory = useLabStore((s) => s.loadStory);
  const stepStory = useLabStore((s) => s.stepStory);
  const longest = Math.max(0, ...story.stories.map((s) => s.steps.length));
  const atStart = story.step <= 1;
  const atEnd = story.step >= longest;
  const loaded = story.stories.length > 0;
  const section = useRef<HTMLElement>(null);
  const stepsBar = useRef<HTMLDivElement>(null);
  const grid = useRef<HTMLDivElement>(null);
  const shown = useRef<{ stories: LabStory[]; step: number } | null>(null);

  // A presenter's clicker (PageDown / PageUp) or the arrow keys step the story while it is what the window shows or
  // the focus is in it; a form field's keys are the field's, and another control's (Run, a preset) its own.
  useEffect(() => {
    if (!loaded) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented || !section.current) return;
      const target = event.target instanceof HTMLElement ? event.target : null;
      const delta = storyStepForKey({
        key: event.key,
        altKey: event.altKey,
        ctrlKey: event.ctrlKey,
        metaKey: event.metaKey,
        shiftKey: event.shiftKey,
        target: target && {
          tagName: target.tagName,
          isContentEditable: target.isContentEditable,
          inStory: section.current.contains(target),
        },
        storyInView: storyInView(section.current.getBoundingClientRect(), window.innerHeight),
      });
      if (delta === 0) return;
      // PageDown would also scroll the page; the step brings its own content into view instead.
      event.preventDefault();
      stepStory(delta);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [loaded, stepStory]);

  // The sticky steps bar and column heads, measured, so that the heads stick under the bar and a step scrolled into
  // view stops below both (their heights change as the bar's buttons wrap on a narrow screen).
  useEffect(() => {
    const box = section.current;
    const bar = stepsBar.current;
    if (!loaded || !box || !bar) return;
    const heads = [...box.querySelectorAll<HTMLElement>("[data-testid=lab-story-head]")];
    const measure = () => {
      box.style.setProperty("--lab-story-steps-h", `${bar.offsetHeight}px`);
      box.style.setProperty("--lab-story-head-h", `${Math.max(0, ...heads.map((h) => h.offsetHeight))}px`);
    };
    measure();
    const observer = new ResizeObserver(measure);
    for (const el of [bar, ...heads]) observer.observe(el);
    return () => observer.disconnect();
  }, [loaded, story.stories]);

  // Each step brings what it changed into view: the newest step (or verdict) lowest on the screen among the
  // changed columns of the first row that has one (side by side on a wide screen; on a phone, where the columns
  // stack, the first column that moved, not a finished one above it).
  useEffect(() => {
    if (!loaded || !grid.current) return;
    const before = shown.current;
    shown.current = { stories: story.stories, step: story.step };
    const from = before?.stories === story.stories ? before.step : 0;
    const changed = new Set(
      changedColumns(
        story.stories.map((s) => s.steps.length),
        from,
        story.step,
      ),
    );
    const columns = [...grid.current.querySelectorAll<HTMLElement>("[data-testid=lab-story-column]")].filter((_, i) =>
      changed.has(i),
    );
    if (columns.length === 0) return;
    const firstRow = Math.min(...columns.map((c) => c.offsetTop));
    const newest = columns
      .filter((c) => c.offsetTop === firstRow)
      .flatMap((c) => [...c.querySelectorAll<HTMLElement>("[data-current]")])
      .sort((a, b) => b.getBoundingClientRect().bottom - a.getBoundingClientRect().bottom)[0];
    newest?.scrollIntoView({ block: "nearest" });
  }, [loaded, story.step, story.stories]);

  return (
    <section className="lab-section lab-story" aria-labelledby="lab-story-title" ref={section}>
      <h2 id="lab-story-title">Story mode</h2>
      <p className="lab-lead">
        Replays one classic interleaving against each strategy on a real Redis, then lets you walk through it.
      </p>
      {/* The stories, then the steps of the one loaded: two rows, so a phone never shows "← Back" beside a story. */}
      <div className="lab-actions" role="group" aria-label="Stories">
        {STORIES.map(([scenario, label]) => (
          <button
            key={scenario}
            type="button"
            className="button"
            data-testid={`lab-story-${scenario}`}
            aria-pressed={loaded && story.scenario === scenario}
            onClick={() => void loadStory(scenario)}
          >
            {label}
          </button>
        ))}
        {story.loading && <span className="lab-status">Replaying…</span>}
      </div>
      {loaded && (
        // aria-disabled, not disabled: a button pressed to the last step keeps the focus (a disabled one drops it to the
        // page, and the next Tab put it in a form field, where the clicker's keys are the field's).
        <div className="lab-actions lab-sticky-bar" role="group" aria-label="Steps" ref={stepsBar}>
          <button
            type="button"
            className="button ghost"
            data-testid="lab-story-prev"
            onClick={() => !atStart && stepStory(-1)}
            aria-disabled={atStart}
          >
            ← Back
          </button>
          <button
            type="button"
            className="button primary"
            data-testid="lab-story-next"
            onClick={() => !atEnd && stepStory(1)}
            aria-disabled={atEnd}
          >
            Next step →
          </button>
          <button
            type="button"
            className="button ghost"
            onClick={() => !atEnd && stepStory(longest)}
            aria-disabled={atEnd}
          >
            To the end
          </button>
          <span className="lab-status" data-testid="lab-story-position">
            step {story.step} / {longest}
          </span>
          <span className="lab-status lab-story-keys">← → or PageUp / PageDown step too</span>
        </div>
      )}
      {story.error && (
        <p className="form-error" role="alert">
          {story.error}
        </p>
      )}
      {loaded && (
        <div className="lab-story-grid" ref={grid}>
          {story.stories.map((s) => (
            <Timeline key={s.strategy} story={s} step={story.step} />
          ))}
        </div>
      )}
    </section>
  );
}
