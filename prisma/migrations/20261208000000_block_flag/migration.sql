-- A block kept on the direct conversation's row (docs/security.md, "Blocking"). 20261207000000_blocks had
-- tally_store_messages lock a direct conversation's row and look the block up, two statements more on every direct
-- send (docs/benchmarks.md, "A twenty-sixth look"). Now every write to "Block" sets "blocked" on the pair's direct
-- conversation, in its own transaction (a trigger, below), and the UPDATE that takes the next seq refuses a blocked
-- row: PostgreSQL re-checks that UPDATE's condition against the row's newest version when it had to wait for it, so
-- a send queued behind a block's write is refused, with no statement added to a send. Only a refused send looks up
-- who blocked whom.
-- A trigger, not the service: during a rolling restart the previous release's instances still write "Block"
-- without knowing of the flag (docs/scaling.md), and their blocks and unblocks must hold as well.
-- The flag is right only if a conversation cannot be created around a block: POST /api/blocks, DELETE
-- /api/blocks/:id and POST /api/conversations take a lock on each pair of people they concern
-- (pg_advisory_xact_lock(low id, high id); exclusive to write a block, shared to create), so a conversation's
-- creation and a block between its members happen one after the other (server/users/blocks.service.ts). The
-- previous release takes no such lock: while it still runs, a direct conversation created at the moment its two
-- people block one another may miss its flag (as it could miss the block before).
-- Also: a version of each user's block list ("blocksVersion", below).

ALTER TABLE "Conversation" ADD COLUMN "blocked" BOOLEAN NOT NULL DEFAULT false;

-- The version of a user's block list, one more at each block or unblock (in its transaction): GET /api/blocks, the
-- answers of POST and DELETE and the blocks:changed push carry it, so a tab keeps the newest list whatever order
-- two of them arrive in.
ALTER TABLE "User" ADD COLUMN "blocksVersion" INTEGER NOT NULL DEFAULT 0;

-- Whether either of the pair blocks the other, onto their direct conversation (if they have one). Its statements see
-- what committed before they started (READ COMMITTED): with the pair's lock held, every earlier block of the pair.
CREATE FUNCTION tally_flag_direct() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    b RECORD;
BEGIN
    IF TG_OP = 'DELETE' THEN b := OLD; ELSE b := NEW; END IF;
    UPDATE "Conversation" c SET "blocked" = EXISTS (
        SELECT 1 FROM "Block" x
        WHERE (x."blockerId" = b."blockerId" AND x."blockedId" = b."blockedId")
           OR (x."blockerId" = b."blockedId" AND x."blockedId" = b."blockerId"))
    WHERE c."directKey" = LEAST(b."blockerId", b."blockedId") || ':' || GREATEST(b."blockerId", b."blockedId");
    RETURN NULL;
END;
$$;

-- Created before the backfill: it locks "Block" against writes until this migration commits, so no block or unblock
-- can slip between the two.
CREATE TRIGGER "Block_flag_direct" AFTER INSERT OR DELETE ON "Block"
    FOR EACH ROW EXECUTE FUNCTION tally_flag_direct();

UPDATE "Conversation" c SET "blocked" = true
WHERE c."kind" = 'direct' AND EXISTS (
    SELECT 1 FROM "Block" b
    WHERE c."directKey" = LEAST(b."blockerId", b."blockedId") || ':' || GREATEST(b."blockerId", b."blockedId"));

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
        -- NOT "blocked": a send that waited for the row (a group of sends ahead of it, or a block being made) is
        -- re-checked against the row as the one before it left it, so it is refused if that was a block.
        UPDATE "Conversation" c SET "lastSeq" = c."lastSeq" + 1, "lastActivityAt" = CURRENT_TIMESTAMP
        WHERE c."id" = p_conversation[i] AND NOT c."blocked"
          AND EXISTS (SELECT 1 FROM "Membership" mb
                      WHERE mb."userId" = p_sender[i] AND mb."conversationId" = p_conversation[i])
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
                          WHERE mb."userId" = p_sender[i] AND mb."conversationId" = p_conversation[i]);
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
        SELECT array_agg(mb."userId" ORDER BY mb."userId") INTO r_members
        FROM "Membership" mb WHERE mb."conversationId" = p_conversation[i];
        r_status := 'stored';
        RETURN NEXT;
    END LOOP;
END
$$;
