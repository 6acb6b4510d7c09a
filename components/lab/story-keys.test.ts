import { describe, expect, it } from "vitest";
import { storyStepForKey, type StoryKey } from "./story-keys";

const press = (key: string, more: Partial<StoryKey> = {}): StoryKey => ({
  key,
  altKey: false,
  ctrlKey: false,
  metaKey: false,
  shiftKey: false,
  target: { tagName: "BODY", isContentEditable: false },
  ...more,
});

describe("stepping a story from the keyboard", () => {
  it("steps forward on → and PageDown, back on ← and PageUp (a presentation clicker's keys)", () => {
    expect(storyStepForKey(press("ArrowRight"))).toBe(1);
    expect(storyStepForKey(press("PageDown"))).toBe(1);
    expect(storyStepForKey(press("ArrowLeft"))).toBe(-1);
    expect(storyStepForKey(press("PageUp"))).toBe(-1);
    expect(storyStepForKey(press("PageDown", { target: { tagName: "BUTTON", isContentEditable: false } }))).toBe(1);
    expect(storyStepForKey(press("ArrowRight", { target: null }))).toBe(1);
  });

  it("leaves other keys, shortcuts and typing in a form field alone", () => {
    for (const key of ["ArrowDown", "ArrowUp", "Enter", "a", "Home"]) expect(storyStepForKey(press(key))).toBe(0);
    expect(storyStepForKey(press("ArrowLeft", { altKey: true }))).toBe(0);
    expect(storyStepForKey(press("ArrowRight", { metaKey: true }))).toBe(0);
    expect(storyStepForKey(press("PageDown", { ctrlKey: true }))).toBe(0);
    expect(storyStepForKey(press("ArrowRight", { shiftKey: true }))).toBe(0);
    for (const tagName of ["INPUT", "TEXTAREA", "SELECT"]) {
      expect(storyStepForKey(press("ArrowRight", { target: { tagName, isContentEditable: false } }))).toBe(0);
      expect(storyStepForKey(press("PageDown", { target: { tagName, isContentEditable: false } }))).toBe(0);
    }
    expect(storyStepForKey(press("ArrowLeft", { target: { tagName: "DIV", isContentEditable: true } }))).toBe(0);
  });
});
