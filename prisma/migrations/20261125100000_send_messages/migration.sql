-- Storing messages, many at once (docs/benchmarks.md, "Group commit"). A Tally instance gathers the sends that
-- arrive while its previous statements are in flight and stores them with one call of this function: one round
-- trip, one transaction and one WAL flush for all of them, and statements whose plans PL/pgSQL caches. The same
-- call deletes the outbox entries of earlier messages whose counters Redis has since applied (p_completed), so
-- completing them costs no transaction of its own while messages flow.
--
-- For each message i, in the order given (callers sort by conversation, so concurrent calls lock conversations
-- in one order and cannot deadlock each other):
--   'duplicate'  the sender already used this clientMsgId: nothing written (the caller returns the original);
--   'forbidden'  the sender is not a member, or the conversation does not exist: nothing written;
--   'stored'     the conversation's next seq (its row lock orders concurrent sends), the message, the sender's
--                read cursor moved to it and an outbox entry for the counters, with the members' ids and names
--                and the conversation's kind (which the mention rule needs).
-- A message that fails otherwise (a concurrent send with the same clientMsgId: a unique violation) aborts the
-- whole call; the caller then stores each message on its own.
CREATE FUNCTION tally_send_messages(
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
    r_members JSON
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
        SELECT COALESCE(json_agg(json_build_object('id', u."id", 'name', u."name")), '[]'::JSON) INTO r_members
        FROM "Membership" mb JOIN "User" u ON u."id" = mb."userId"
        WHERE mb."conversationId" = p_conversation[i];
        r_status := 'stored';
        RETURN NEXT;
    END LOOP;
END
$$;
