-- A direct conversation hidden from its second member (20261206000000_hidden_direct: someone else started it and
-- nobody has written in it yet) is no conversation of theirs (docs/protocol.md, "A direct conversation with no
-- message is its creator's alone"). Their mute and mark were refused, but a send or a read by its id, found by
-- trying ids, was taken: a send wrote the first message of a conversation they never started, a read answered ok.
-- Both functions now treat such a membership as none: no row, so the caller answers `forbidden` as for a
-- conversation that does not exist. The way to write first stays starting the conversation (POST
-- /api/conversations), which clears "hidden". Each function is the previous one with that condition added.
-- The send judges the row as its statement's snapshot has it: a send racing the creator's first message, not yet
-- committed, is refused (it does not wait for that row's lock); once the message is in, it goes through.

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
        SELECT array_agg(mb."userId" ORDER BY mb."userId") INTO r_members
        FROM "Membership" mb WHERE mb."conversationId" = p_conversation[i];
        r_status := 'stored';
        RETURN NEXT;
    END LOOP;
END
$$;

-- A read (20261204010000_read_cursor_lock), refused for a hidden membership before it writes anything.
CREATE OR REPLACE FUNCTION tally_read_cursor(
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
    v_hidden BOOLEAN;
BEGIN
    -- The lock first: the statements below take their snapshot after it, so they see a send that held it.
    PERFORM 1 FROM "Membership" mb
    WHERE mb."userId" = p_user AND mb."conversationId" = p_conversation FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT c."lastSeq", GREATEST(mb."lastReadSeq", LEAST(p_seq, c."lastSeq")), mb."hidden" AND c."lastSeq" = 0
    INTO r_last_seq, v_cursor, v_hidden
    FROM "Membership" mb JOIN "Conversation" c ON c."id" = mb."conversationId"
    WHERE mb."userId" = p_user AND mb."conversationId" = p_conversation;
    IF v_hidden THEN
        RETURN;
    END IF;
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
