import { Fragment } from "react";
import { isEveryoneWord, mentionSegments } from "@/server/contracts/mentions";
import type { ConversationKind } from "@/server/contracts";
import { linkParts } from "./links";

/**
 * A message's text with its mentions marked (server/contracts/mentions.ts decides what is one) and its web addresses
 * made links (./links.ts). `myName` is the
 * signed-in member's name, or null when the message is theirs (the sender never mentions themselves): a mention of
 * them, or `@all`/`@here` in a group, is marked as theirs.
 */
export function MessageText({
  content,
  memberNames,
  kind,
  myName,
}: {
  content: string;
  memberNames: readonly string[];
  kind: ConversationKind;
  myName: string | null;
}) {
  return mentionSegments(content, memberNames, kind).map((segment, i) => {
    if (segment.mention === null)
      return (
        <Fragment key={i}>
          {linkParts(segment.text).map((part, j) =>
            part.href === undefined ? (
              <Fragment key={j}>{part.text}</Fragment>
            ) : (
              // A new tab, which gets neither this page (noopener) nor where it came from (noreferrer). Left to right and
              // isolated (dir): a bidi control in the text around it cannot turn the address around.
              <a
                key={j}
                href={part.href}
                dir="ltr"
                target="_blank"
                rel="noopener noreferrer nofollow"
                data-testid="message-link"
              >
                {part.text}
              </a>
            ),
          )}
        </Fragment>
      );
    const me = myName !== null && (segment.mention === myName || isEveryoneWord(segment.mention));
    return (
      <span
        key={i}
        data-testid="mention"
        data-mention={segment.mention}
        data-me={me || undefined}
        className={me ? "mention me" : "mention"}
      >
        {segment.text}
      </span>
    );
  });
}
