/** A key press as the story mode sees it, where the keyboard's focus was, and whether the story is in view. */
export interface StoryKey {
  key: string;
  altKey: boolean;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
  /**
   * The focused element's tag (INPUT, TEXTAREA, SELECT, BUTTON, BODY …), whether it is editable text, and whether
   * it is inside the story section; null: nothing focused (the page).
   */
  target: { tagName: string; isContentEditable: boolean; inStory: boolean } | null;
  /** The story section is what the window shows (storyInView). */
  storyInView: boolean;
}

/** Presentation clickers send PageDown / PageUp; a keyboard's arrows do the same. */
const FORWARD = new Set(["ArrowRight", "PageDown"]);
const BACK = new Set(["ArrowLeft", "PageUp"]);
const FORM_FIELDS = new Set(["INPUT", "TEXTAREA", "SELECT"]);
/** Focus on the page itself, not on a control. */
const PAGE = new Set(["BODY", "HTML"]);

/**
 * How far a key steps the story: +1, −1, or 0 when it is not a stepping key, comes with a modifier (a browser
 * or system shortcut), or is typed into a form field (an arrow there moves the caret or changes the number).
 * The story takes the keys when the focus is inside it, or on the page while the story is in view; focus on another
 * control (Run, a preset, the glossary) or a story scrolled away leaves them to the page (PageDown scrolls it).
 */
export function storyStepForKey(event: StoryKey): -1 | 0 | 1 {
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return 0;
  const { target } = event;
  if (target && (FORM_FIELDS.has(target.tagName) || target.isContentEditable)) return 0;
  const ours = target?.inStory || ((!target || PAGE.has(target.tagName)) && event.storyInView);
  if (!ours) return 0;
  if (FORWARD.has(event.key)) return 1;
  if (BACK.has(event.key)) return -1;
  return 0;
}

/** At least this share of the window (or of the story, when it is shorter than the window) shows the story. */
export const STORY_IN_VIEW_SHARE = 0.3;

/** Whether a section at `box` (its client rect's top and bottom) is in view in a window `viewportHeight` tall. */
export function storyInView(box: { top: number; bottom: number }, viewportHeight: number): boolean {
  const visible = Math.min(box.bottom, viewportHeight) - Math.max(box.top, 0);
  const whole = Math.min(box.bottom - box.top, viewportHeight);
  return whole > 0 && visible >= STORY_IN_VIEW_SHARE * whole;
}
