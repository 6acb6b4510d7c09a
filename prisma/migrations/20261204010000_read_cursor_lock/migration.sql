-- A read and a send of the same member no longer race (docs/consistency.md, "Own messages"). The read statement
-- moved the cursor over the reader's own messages right above it, but as one statement it judged them by its own
-- snapshot: a send committing meanwhile, which saw the old cursor (not right below its message) and so did not move
-- it, was invisible to the read, and the cursor ended right below an own message. Now both take the membership's
-- row lock before they judge: the send statement always writes the sender's membership row (as it did before
-- 20261204000000, with GREATEST), and a read is tally_read_cursor, which locks the row first and then, in a
-- statement with a snapshot taken after the lock, moves the cursor. Whichever comes second sees the other's
-- commit: a send after the read finds the cursor right below its message and moves it; a read after the send sees
-- the message and moves over it.
--
-- (20261204000000's note on a rolling restart says less than happens: the previous release's scripts also count
-- own messages pending above a cursor, until a new instance applies the conversation's next event or reconciliation
-- repairs it. docs/consistency.md, "During a rolling restart". That migration is applied as written: its checksum.)

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


-- A read of `p_user` in `p_conversation` up to `p_seq`: the cursor moves to max(cursor, LEAST(p_seq, lastSeq)) and on
-- over the reader's own messages right above it; when it reaches lastSeq and the read names a mark (p_mark_version
-- not NULL), marks up to it are cleared, never above the stored one; an outbox entry records the read for the
-- counters. No row when the user is not a member. (server/unread/read.service.ts says why each part.)
CREATE FUNCTION tally_read_cursor(
    p_user INTEGER,
    p_conversation INTEGER,
    p_seq INTEGER,
    p_mark_version INTEGER
) RETURNS TABLE (
    r_last_read_seq INTEGER,
    r_last_seq INTEGER,
    r_mark_cleared_version INTEGER,
    r_outbox_id INTEGER
) LANGUAGE plpgsql AS $$
DECLARE
    v_cursor INTEGER;
BEGIN
    -- The lock first: the statements below take their snapshot after it, so they see a send that held it.
    PERFORM 1 FROM "Membership" mb
    WHERE mb."userId" = p_user AND mb."conversationId" = p_conversation FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT c."lastSeq", GREATEST(mb."lastReadSeq", LEAST(p_seq, c."lastSeq"))
    INTO r_last_seq, v_cursor
    FROM "Membership" mb JOIN "Conversation" c ON c."id" = mb."conversationId"
    WHERE mb."userId" = p_user AND mb."conversationId" = p_conversation;
    -- On over the reader's own messages: up to the first message of someone else above the cursor, or lastSeq.
    SELECT LEAST(r_last_seq, COALESCE(MIN(m."seq") - 1, r_last_seq)) INTO v_cursor
    FROM "Message" m
    WHERE m."conversationId" = p_conversation AND m."seq" > v_cursor AND m."senderId" <> p_user;
    UPDATE "Membership" mb SET
        "lastReadSeq" = v_cursor,
        "markClearedVersion" = CASE
            WHEN p_mark_version IS NOT NULL AND v_cursor >= r_last_seq
            THEN GREATEST(mb."markClearedVersion", LEAST(p_mark_version, mb."markVersion"))
            ELSE mb."markClearedVersion" END
    WHERE mb."userId" = p_user AND mb."conversationId" = p_conversation
    RETURNING mb."lastReadSeq", mb."markClearedVersion" INTO r_last_read_seq, r_mark_cleared_version;
    INSERT INTO "OutboxEvent" ("kind", "conversationId", "userId", "seq")
    VALUES ('read', p_conversation, p_user, r_last_read_seq)
    RETURNING "id" INTO r_outbox_id;
    RETURN NEXT;
END
$$;
