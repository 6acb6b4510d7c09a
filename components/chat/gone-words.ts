import type { GoneNoticeState } from "@/components/store/types";

/** A part of the notice's sentence: words, or the conversation's title (shown quoted and isolated). */
export type GonePart = string | { title: string };

/**
 * The notice's sentence: who removed the open conversation and where, so nobody is left to guess between "it was
 * deleted" and "you left it" (what it said when it could not tell).
 */
export function goneWords({ title, conversationKind, cause }: GoneNoticeState): GonePart[] {
  const it: GonePart = title === null ? "this conversation" : { title };
  const It: GonePart = title === null ? "This conversation" : { title };
  const elsewhere = " in another tab or on another device.";
  switch (cause.kind) {
    case "left":
      return ["You left ", it, elsewhere];
    case "deleted":
      if (cause.by === "you") return ["You deleted ", it, elsewhere];
      if (cause.by === null)
        return conversationKind === "direct" ? ["Your conversation with ", it, " was deleted."] : [It, " was deleted."];
      // A direct conversation's title is the other member's name: "bob deleted “bob”" would say it twice.
      if (conversationKind === "direct") return [`${cause.by} deleted your conversation.`];
      return [`${cause.by} deleted `, it, "."];
    case "removed":
      return cause.by === null ? ["You were removed from ", it, "."] : [`${cause.by} removed you from `, it, "."];
    case "unknown":
      return [It, " is gone: it was deleted, or you left it or were removed."];
  }
}
