-- A conversation's last activity, kept on its row: the time of its newest message, or while it has none its
-- creation. A user's conversation list is ordered by it, newest first, and read a page at a time: with the time on
-- the row, the page of a user in 5000 conversations is a sort of their 5000 rows, not a look-up of each one's last
-- message first (10 ms of the 46 ms their whole list took; docs/benchmarks.md, "A twelfth look").
--
-- tally_store_messages sets it in the UPDATE that takes the conversation's next seq, and gives the message the same
-- time, so the row and its newest message always agree (a client orders its list by the message's time). Whatever
-- else inserts messages (the demo seed, the bench's big user, tests) sets it itself. tally_send_messages is left as it
-- is: only instances two releases back call it, and a rolling restart to this release starts from the previous one,
-- whose instances call tally_store_messages (this body from the moment the migration commits).
ALTER TABLE "Conversation" ADD COLUMN "lastActivityAt" TIMESTAMP(3);

UPDATE "Conversation" c SET "lastActivityAt" = COALESCE(
    (SELECT m."createdAt" FROM "Message" m WHERE m."conversationId" = c."id" AND m."seq" = c."lastSeq"),
    c."createdAt");

ALTER TABLE "Conversation"
    ALTER COLUMN "lastActivityAt" SET NOT NULL,
    ALTER COLUMN "lastActivityAt" SET DEFAULT CURRENT_TIMESTAMP;

-- The same function as in 20261125200000_store_messages, but for the two statements that set the conversation's
-- activity and give the message the same time.
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
