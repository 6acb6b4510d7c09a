/** A key press as the story mode sees it, and where the keyboard's focus was. */
export interface StoryKey {
  key: string;
  altKey: boolean;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
  /** The focused element's tag (INPUT, TEXTAREA, SELECT …) and whether it is editable text. */
  target: { tagName: string; isContentEditable: boolean } | null;
}

/** Presentation clickers send PageDown / PageUp; a keyboard's arrows do the same. */
const FORWARD = new Set(["ArrowRight", "PageDown"]);
const BACK = new Set(["ArrowLeft", "PageUp"]);
const FORM_FIELDS = new Set(["INPUT", "TEXTAREA", "SELECT"]);

/**
 * How far a key steps the story: +1, −1, or 0 when it is not a stepping key, comes with a modifier (a browser
 * or system shortcut), or is typed into a form field (an arrow there moves the caret or changes the number).
 */
export function storyStepForKey(event: StoryKey): -1 | 0 | 1 {
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return 0;
  if (event.target && (FORM_FIELDS.has(event.target.tagName) || event.target.isContentEditable)) return 0;
  if (FORWARD.has(event.key)) return 1;
  if (BACK.has(event.key)) return -1;
  return 0;
}
