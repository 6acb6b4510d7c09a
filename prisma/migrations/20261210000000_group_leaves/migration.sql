-- A member who left a group, for the group's history ("bob left"). A Departure records the same leave for the
-- counters and is forgotten after a day (docs/consistency.md); this row stays as long as the group does. Written in
-- the leave's transaction (server/conversations/conversations.service.ts). Memberships are never re-created, so one
-- row per pair. Leaves from before this migration are not known.

CREATE TABLE "GroupLeave" (
    "conversationId" INTEGER NOT NULL,
    "userId" INTEGER NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "GroupLeave_pkey" PRIMARY KEY ("conversationId","userId")
);

ALTER TABLE "GroupLeave" ADD CONSTRAINT "GroupLeave_conversationId_fkey" FOREIGN KEY ("conversationId") REFERENCES "Conversation"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "GroupLeave" ADD CONSTRAINT "GroupLeave_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;
