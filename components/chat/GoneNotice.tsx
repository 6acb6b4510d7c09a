"use client";

import { Fragment } from "react";
import { useChatStore } from "@/components/providers/ChatProvider";
import { focusConversationList } from "./focus";
import { goneWords } from "./gone-words";

/**
 * Says why the open conversation closed by itself (deleted by its creator or the other member, or left or deleted
 * in another tab: `goneWords`). Under the header, so a phone, which shows the list once nothing is open, sees it
 * too; the status region is always there (empty otherwise), so screen readers announce it when it fills.
 */
export function GoneNotice() {
  const notice = useChatStore((s) => s.goneNotice);
  const dismiss = useChatStore((s) => s.dismissGoneNotice);
  return (
    <div className="notice-region" role="status">
      {notice && (
        <p className="gone-notice" data-testid="gone-notice">
          <span id="gone-notice-text">
            {goneWords(notice).map((part, i) =>
              typeof part === "string" ? (
                part
              ) : (
                // Isolated: a title with bidi controls cannot turn the rest of the sentence around.
                <Fragment key={i}>
                  “<bdi>{part.title}</bdi>”
                </Fragment>
              ),
            )}
          </span>
          <button
            type="button"
            className="button small ghost"
            onClick={() => {
              dismiss();
              // The button goes with the notice: the focus goes on to the list.
              focusConversationList();
            }}
            data-testid="gone-notice-dismiss"
            aria-describedby="gone-notice-text"
          >
            OK
          </button>
        </p>
      )}
    </div>
  );
}
