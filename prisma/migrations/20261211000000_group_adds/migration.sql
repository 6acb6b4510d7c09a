-- Adding people to a group (POST /api/conversations/:id/members). A member added later joins at the group's lastSeq
-- then: their read cursor starts there (they may read the history, but none of it counts as unread for them), and so
-- does "joinedSeq", the floor every counter event for them carries from then on (docs/consistency.md, "Joining a group"). Without it, a
-- message stored before they joined, replayed by the relay after (the replay reads the members afresh), or a message
-- stored after it whose fan-out reached Redis before anything else of theirs did, would count every message of the
-- group up to it as unread for them.
-- A GroupJoin row tells the group's history who added them, when and at which seq ("carol added dave"), written in
-- the add's transaction; like GroupLeave it stays as long as the group does, also once they have left it.

ALTER TABLE "Membership" ADD COLUMN "joinedSeq" INTEGER NOT NULL DEFAULT 0;

CREATE TABLE "GroupJoin" (
    "conversationId" INTEGER NOT NULL,
    "userId" INTEGER NOT NULL,
    "addedById" INTEGER,
    "seq" INTEGER NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "GroupJoin_pkey" PRIMARY KEY ("conversationId","userId")
);

ALTER TABLE "GroupJoin" ADD CONSTRAINT "GroupJoin_conversationId_fkey" FOREIGN KEY ("conversationId") REFERENCES "Conversation"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "GroupJoin" ADD CONSTRAINT "GroupJoin_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "GroupJoin" ADD CONSTRAINT "GroupJoin_addedById_fkey" FOREIGN KEY ("addedById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- The send (20261209000000_hidden_is_not_theirs) answering the floors too: r_joined holds the members added later,
-- r_joined_seqs the seq each joined at, in the same order (two flat arrays: Prisma's raw queries, which the sends
-- with mentions use, do not read a two-dimensional one). New columns change the function's type, so it is dropped
-- and created again, in this migration's transaction.
DROP FUNCTION tally_store_messages(INTEGER[], INTEGER[], TEXT[], TEXT[], INTEGER[]);

CREATE FUNCTION tally_store_messages(
    p_conversation INTEGER[],
    p_sender INTEGER[],
    p_client_msg_id TEXT[],
    p_content TEXT[],
    p_completed INTEGER[]
) RETURNS TABLE (
    r_idx INTEGER,
    r_status TEXT,
    r_id INTEGER,
    r_seq INTEGER,
    r_created_at TIMESTAMP(3),
    r_kind TEXT,
    r_outbox_id INTEGER,
    r_members INTEGER[],
    r_joined INTEGER[],
    r_joined_seqs INTEGER[]
) LANGUAGE plpgsql AS $$
DECLARE
    i INTEGER;
BEGIN
    IF COALESCE(array_length(p_completed, 1), 0) > 0 THEN
        DELETE FROM "OutboxEvent" WHERE "id" = ANY(p_completed);
    END IF;
    FOR i IN 1 .. COALESCE(array_length(p_conversation, 1), 0) LOOP
        r_idx := i;
        r_status := NULL; r_id := NULL; r_seq := NULL; r_created_at := NULL;
        r_kind := NULL; r_outbox_id := NULL; r_members := NULL; r_joined := NULL; r_joined_seqs := NULL;
        IF EXISTS (SELECT 1 FROM "Message" m WHERE m."senderId" = p_sender[i] AND m."clientMsgId" = p_client_msg_id[i]) THEN
            r_status := 'duplicate';
            RETURN NEXT;
            CONTINUE;
        END IF;
        -- NOT "blocked": a send that waited for the row (a group of sends ahead of it, or a block being made) is
        -- re-checked against the row as the one before it left it, so it is refused if that was a block.
        UPDATE "Conversation" c SET "lastSeq" = c."lastSeq" + 1, "lastActivityAt" = CURRENT_TIMESTAMP
        WHERE c."id" = p_conversation[i] AND NOT c."blocked"
          AND EXISTS (SELECT 1 FROM "Membership" mb
                      WHERE mb."userId" = p_sender[i] AND mb."conversationId" = p_conversation[i]
                        AND NOT (mb."hidden" AND c."lastSeq" = 0))
        RETURNING c."lastSeq", c."kind"::TEXT, c."lastActivityAt" INTO r_seq, r_kind, r_created_at;
        IF NOT FOUND THEN
            -- Only a refused send looks further. A member's send is refused only by the flag, whatever the flag says
            -- now (an unblock may have committed since): a direct conversation is 'blocking' when the sender blocks
            -- the other member, else 'blocked'. The sender's own block comes first: someone who blocked a person is
            -- not told that person blocked them back. Anything else is 'forbidden'.
            SELECT CASE WHEN c."kind" <> 'direct' THEN 'forbidden'
                        WHEN EXISTS (SELECT 1 FROM "Membership" other
                                     JOIN "Block" b ON b."blockerId" = p_sender[i] AND b."blockedId" = other."userId"
                                     WHERE other."conversationId" = c."id" AND other."userId" <> p_sender[i])
                        THEN 'blocking' ELSE 'blocked' END INTO r_status
            FROM "Conversation" c
            WHERE c."id" = p_conversation[i]
              AND EXISTS (SELECT 1 FROM "Membership" mb
                          WHERE mb."userId" = p_sender[i] AND mb."conversationId" = p_conversation[i]
                            AND NOT (mb."hidden" AND c."lastSeq" = 0));
            r_status := COALESCE(r_status, 'forbidden');
            RETURN NEXT;
            CONTINUE;
        END IF;
        INSERT INTO "Message" ("conversationId", "seq", "senderId", "clientMsgId", "content", "createdAt")
        VALUES (p_conversation[i], r_seq, p_sender[i], p_client_msg_id[i], p_content[i], r_created_at)
        RETURNING "id" INTO r_id;
        -- The sender's cursor moves over their message only if it was right below it: a message above something
        -- unread (sent from the divider, or queued offline while others wrote) reads nothing. The row is always
        -- written, so always locked: a read of the same membership waits for this commit, or this for the read's,
        -- and whichever comes second sees the other (tally_read_cursor below).
        UPDATE "Membership" mb
        SET "lastReadSeq" = CASE WHEN mb."lastReadSeq" = r_seq - 1 THEN r_seq ELSE mb."lastReadSeq" END
        WHERE mb."userId" = p_sender[i] AND mb."conversationId" = p_conversation[i];
        INSERT INTO "OutboxEvent" ("kind", "conversationId", "userId", "seq")
        VALUES ('message', p_conversation[i], p_sender[i], r_seq)
        RETURNING "id" INTO r_outbox_id;
        -- Members added after the group began, and the seq each joined at; NULL when none (most conversations). The
        -- same snapshot as the members, taken after the conversation's row lock.
        SELECT array_agg(mb."userId" ORDER BY mb."userId"),
               array_agg(mb."userId" ORDER BY mb."userId") FILTER (WHERE mb."joinedSeq" > 0),
               array_agg(mb."joinedSeq" ORDER BY mb."userId") FILTER (WHERE mb."joinedSeq" > 0)
        INTO r_members, r_joined, r_joined_seqs
        FROM "Membership" mb WHERE mb."conversationId" = p_conversation[i];
        r_status := 'stored';
        RETURN NEXT;
    END LOOP;
END
$$;
