-- tally_send_messages, answering with the members' ids instead of their ids and names as JSON: the names (a
-- join with "User" and a JSON object per member and message) are only needed for a message that may mention
-- someone, which reads them itself. Measured with pgbench on this machine (3 messages a call): about a fifth of the
-- call's PostgreSQL CPU. docs/benchmarks.md, "Where the time went".
--
-- For each message i, in the order given (callers sort by conversation, so concurrent calls lock conversations
-- in one order and cannot deadlock each other):
--   'duplicate'  the sender already used this clientMsgId: nothing written (the caller returns the original);
--   'forbidden'  the sender is not a member, or the conversation does not exist: nothing written;
--   'stored'     the conversation's next seq (its row lock orders concurrent sends), the message, the sender's
--                read cursor moved to it and an outbox entry for the counters, with the members' ids (ascending)
--                and the conversation's kind (which the mention rule needs).
-- A message that fails otherwise (a concurrent send with the same clientMsgId: a unique violation) aborts the
-- whole call; the caller then stores each message on its own. The same call first deletes the outbox entries of
-- earlier messages whose counters Redis has since applied (p_completed).
--
-- tally_send_messages stays for instances of the previous release during a rolling restart.
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
        UPDATE "Conversation" c SET "lastSeq" = c."lastSeq" + 1
        WHERE c."id" = p_conversation[i]
          AND EXISTS (SELECT 1 FROM "Membership" mb
                      WHERE mb."userId" = p_sender[i] AND mb."conversationId" = p_conversation[i])
        RETURNING c."lastSeq", c."kind"::TEXT INTO r_seq, r_kind;
        IF NOT FOUND THEN
            r_status := 'forbidden';
            RETURN NEXT;
            CONTINUE;
        END IF;
        INSERT INTO "Message" ("conversationId", "seq", "senderId", "clientMsgId", "content")
        VALUES (p_conversation[i], r_seq, p_sender[i], p_client_msg_id[i], p_content[i])
        RETURNING "id", "createdAt" INTO r_id, r_created_at;
        UPDATE "Membership" mb SET "lastReadSeq" = GREATEST(mb."lastReadSeq", r_seq)
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
