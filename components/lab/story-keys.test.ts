import { describe, expect, it } from "vitest";
import { storyInView, storyStepForKey, type StoryKey } from "./story-keys";

const press = (key: string, more: Partial<StoryKey> = {}): StoryKey => ({
  key,
  altKey: false,
  ctrlKey: false,
  metaKey: false,
  shiftKey: false,
  target: { tagName: "BODY", isContentEditable: false, inStory: false },
  storyInView: true,
  ...more,
});
const focused = (tagName: string, inStory = false) => ({ target: { tagName, isContentEditable: false, inStory } });

describe("stepping a story from the keyboard", () => {
  it("steps forward on → and PageDown, back on ← and PageUp (a presentation clicker's keys)", () => {
    expect(storyStepForKey(press("ArrowRight"))).toBe(1);
    expect(storyStepForKey(press("PageDown"))).toBe(1);
    expect(storyStepForKey(press("ArrowLeft"))).toBe(-1);
    expect(storyStepForKey(press("PageUp"))).toBe(-1);
    expect(storyStepForKey(press("PageDown", focused("BUTTON", true)))).toBe(1);
    expect(storyStepForKey(press("ArrowRight", { target: null }))).toBe(1);
  });

  it("leaves other keys, shortcuts and typing in a form field alone", () => {
    for (const key of ["ArrowDown", "ArrowUp", "Enter", "a", "Home"]) expect(storyStepForKey(press(key))).toBe(0);
    expect(storyStepForKey(press("ArrowLeft", { altKey: true }))).toBe(0);
    expect(storyStepForKey(press("ArrowRight", { metaKey: true }))).toBe(0);
    expect(storyStepForKey(press("PageDown", { ctrlKey: true }))).toBe(0);
    expect(storyStepForKey(press("ArrowRight", { shiftKey: true }))).toBe(0);
    for (const tagName of ["INPUT", "TEXTAREA", "SELECT"]) {
      expect(storyStepForKey(press("ArrowRight", focused(tagName)))).toBe(0);
      expect(storyStepForKey(press("PageDown", focused(tagName)))).toBe(0);
    }
    expect(
      storyStepForKey(press("ArrowLeft", { target: { tagName: "DIV", isContentEditable: true, inStory: false } })),
    ).toBe(0);
  });

  it("leaves the keys to the page while the story is scrolled away, and to another control that has the focus", () => {
    // The page scrolled to the form or the charts: PageDown scrolls the page.
    expect(storyStepForKey(press("PageDown", { storyInView: false }))).toBe(0);
    expect(storyStepForKey(press("ArrowLeft", { storyInView: false, target: null }))).toBe(0);
    // Run, a preset, the glossary: focused outside the story, even with the story on screen.
    for (const tagName of ["BUTTON", "A", "SUMMARY"]) {
      expect(storyStepForKey(press("ArrowLeft", focused(tagName)))).toBe(0);
      expect(storyStepForKey(press("PageDown", focused(tagName)))).toBe(0);
    }
    // Focus inside the story (its Next button) steps it wherever the page is scrolled.
    expect(storyStepForKey(press("PageDown", { ...focused("BUTTON", true), storyInView: false }))).toBe(1);
  });
});

describe("whether the story is in view", () => {
  it("needs 30% of the window, or of a story shorter than the window", () => {
    expect(storyInView({ top: 0, bottom: 3000 }, 720)).toBe(true);
    expect(storyInView({ top: -2500, bottom: 500 }, 720)).toBe(true);
    expect(storyInView({ top: 600, bottom: 3000 }, 720)).toBe(false);
    expect(storyInView({ top: 500, bottom: 3000 }, 720)).toBe(true);
    expect(storyInView({ top: -2900, bottom: 100 }, 720)).toBe(false);
    // A short story (200 px): 60 px of it is enough.
    expect(storyInView({ top: 660, bottom: 860 }, 720)).toBe(true);
    expect(storyInView({ top: 680, bottom: 880 }, 720)).toBe(false);
    expect(storyInView({ top: 800, bottom: 1000 }, 720)).toBe(false);
  });
});
