-- Blocking (docs/security.md, "Blocking"): one user blocks another. The blocked user can no longer start a
-- conversation with the blocker or put them in a group (server/conversations/conversations.service.ts), and neither
-- of the two can write in their direct conversation until the blocker unblocks: tally_store_messages answers
-- 'blocking' (the sender blocked the other member; said first, so a blocker never learns they were blocked back) or
-- 'blocked' (the other member blocked the sender) and stores nothing. A send retried after a block still gets its
-- first answer ('duplicate' is judged first). Groups they share are unchanged.
-- The statement is tally_store_messages of 20261204010000_read_cursor_lock with the check added: a direct
-- conversation's row is locked first (members only), then the block looked up in a statement of its own, which sees
-- a block committed while the send waited for the lock; POST /api/blocks locks the same row
-- (server/users/blocks.service.ts). Looked up before the lock, a send waiting behind a group of sends was stored
-- after the block had been answered (found by review before this migration was released).

CREATE TABLE "Block" (
    "blockerId" INTEGER NOT NULL,
    "blockedId" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Block_pkey" PRIMARY KEY ("blockerId","blockedId"),
    CONSTRAINT "Block_not_self" CHECK ("blockerId" <> "blockedId")
);

CREATE INDEX "Block_blockedId_idx" ON "Block"("blockedId");

ALTER TABLE "Block" ADD CONSTRAINT "Block_blockerId_fkey" FOREIGN KEY ("blockerId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "Block" ADD CONSTRAINT "Block_blockedId_fkey" FOREIGN KEY ("blockedId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE OR REPLACE FUNCTION tally_store_messages(
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
    r_members INTEGER[]
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
        r_kind := NULL; r_outbox_id := NULL; r_members := NULL;
        IF EXISTS (SELECT 1 FROM "Message" m WHERE m."senderId" = p_sender[i] AND m."clientMsgId" = p_client_msg_id[i]) THEN
            r_status := 'duplicate';
            RETURN NEXT;
            CONTINUE;
        END IF;
        -- A direct conversation's row is locked before its block is looked up, and the look-up, a statement of its
        -- own, sees every block committed while this waited for the lock: POST /api/blocks locks the same row
        -- (blocks.service.ts), so a send either commits before the block or sees it. Checked before the lock, a send
        -- waiting on the row (a group of sends ahead of it) was stored after the block had been answered. A group's
        -- row is not locked here, nor anyone's by a non-member (both filtered first; the UPDATE below refuses them).
        PERFORM 1 FROM "Conversation" c
        WHERE c."id" = p_conversation[i] AND c."kind" = 'direct'
          AND EXISTS (SELECT 1 FROM "Membership" mb
                      WHERE mb."userId" = p_sender[i] AND mb."conversationId" = p_conversation[i])
        FOR UPDATE OF c;
        IF FOUND THEN
            -- 'blocking' when the sender blocked the other member, else 'blocked' when the other blocked the sender.
            -- The sender's own block comes first: someone who blocked a person is not told that person blocked them
            -- back.
            SELECT CASE WHEN b."blockerId" = p_sender[i] THEN 'blocking' ELSE 'blocked' END INTO r_status
            FROM "Membership" other
              JOIN "Block" b ON (b."blockerId" = other."userId" AND b."blockedId" = p_sender[i])
                             OR (b."blockerId" = p_sender[i] AND b."blockedId" = other."userId")
            WHERE other."conversationId" = p_conversation[i] AND other."userId" <> p_sender[i]
            ORDER BY b."blockerId" = p_sender[i] DESC
            LIMIT 1;
            IF r_status IS NOT NULL THEN
                RETURN NEXT;
                CONTINUE;
            END IF;
        END IF;
        UPDATE "Conversation" c SET "lastSeq" = c."lastSeq" + 1, "lastActivityAt" = CURRENT_TIMESTAMP
        WHERE c."id" = p_conversation[i]
          AND EXISTS (SELECT 1 FROM "Membership" mb
                      WHERE mb."userId" = p_sender[i] AND mb."conversationId" = p_conversation[i])
        RETURNING c."lastSeq", c."kind"::TEXT, c."lastActivityAt" INTO r_seq, r_kind, r_created_at;
        IF NOT FOUND THEN
            r_status := 'forbidden';
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
        SELECT array_agg(mb."userId" ORDER BY mb."userId") INTO r_members
        FROM "Membership" mb WHERE mb."conversationId" = p_conversation[i];
        r_status := 'stored';
        RETURN NEXT;
    END LOOP;
END
$$;
