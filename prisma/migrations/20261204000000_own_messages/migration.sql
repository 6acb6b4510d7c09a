-- Own messages (docs/consistency.md, "Own messages"): a send no longer reads everything above it. Until now the
-- send statement moved the sender's cursor to their new message, so a reply sent from the "New messages" divider,
-- or a message queued offline and sent after others arrived, read messages the sender never saw. Now the cursor
-- moves over the message only when it was right below it (nothing unread between); otherwise the message stays
-- above the cursor and the counters count it out as the sender's own (rebuilds read those seqs with the index
-- below: a range per membership, however many messages the user ever sent). A read moves the cursor over the
-- own messages right above where it lands (server/unread/read.service.ts), so the cursor never stops right below
-- an own message, and the counters' scripts keep the same rule.
--
-- The function keeps its signature and answers; only the sender's cursor statement changed. Instances of the
-- previous release still running during a rolling restart call it too: their counters move the sender's cursor in
-- Redis where the database did not, which reconciliation reports and repairs (Redis registers above the database).
CREATE INDEX "Message_senderId_conversationId_seq_idx" ON "Message"("senderId", "conversationId", "seq");

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
        -- unread (sent from the divider, or queued offline while others wrote) reads nothing.
        UPDATE "Membership" mb SET "lastReadSeq" = r_seq
        WHERE mb."userId" = p_sender[i] AND mb."conversationId" = p_conversation[i] AND mb."lastReadSeq" = r_seq - 1;
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
