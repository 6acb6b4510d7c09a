-- A send must not be stored for someone who is no longer a member. tally_store_messages checked membership inside
-- the UPDATE that takes the next seq, with that statement's snapshot; when the send had to wait for the conversation's
-- row (held by a removal of the sender, DELETE /api/conversations/:id/members/:userId, which locks the row before it
-- deletes the membership), PostgreSQL re-checked only the row itself after the wait, not the EXISTS, so the send was
-- stored after the removal had committed (found by a review: a scratch test held the row, queued the removal and then
-- the removed member's send, and the send answered ok). The sender's cursor update, a statement of its own with a fresh
-- snapshot, now comes before the message and refuses the send when it finds no membership, giving the seq back.
-- A leave that commits while the send waits for its membership row is refused the same way. Nothing else changes; the
-- whole function is given again (SQL has no partial redefinition), with the same arguments and columns.

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
        -- The sender's cursor moves over their message only if it was right below it: a message above something
        -- unread (sent from the divider, or queued offline while others wrote) reads nothing. The row is always
        -- written, so always locked: a read of the same membership waits for this commit, or this for the read's,
        -- and whichever comes second sees the other (tally_read_cursor below).
        -- Its own statement, so its own snapshot, taken after the conversation's row lock: the EXISTS above was
        -- checked with the snapshot from before a wait for that lock, and PostgreSQL re-checks only the row itself
        -- after one. A membership removed (by the group's creator) or left while this send waited is gone here: the
        -- send is refused and the seq it took given back (the row is still ours), as if it had come after.
        UPDATE "Membership" mb
        SET "lastReadSeq" = CASE WHEN mb."lastReadSeq" = r_seq - 1 THEN r_seq ELSE mb."lastReadSeq" END
        WHERE mb."userId" = p_sender[i] AND mb."conversationId" = p_conversation[i];
        IF NOT FOUND THEN
            UPDATE "Conversation" c SET "lastSeq" = c."lastSeq" - 1,
                "lastActivityAt" = COALESCE((SELECT m."createdAt" FROM "Message" m
                                             WHERE m."conversationId" = c."id" AND m."seq" = c."lastSeq" - 1),
                                            c."createdAt")
            WHERE c."id" = p_conversation[i];
            r_seq := NULL; r_kind := NULL; r_created_at := NULL;
            r_status := 'forbidden';
            RETURN NEXT;
            CONTINUE;
        END IF;
        INSERT INTO "Message" ("conversationId", "seq", "senderId", "clientMsgId", "content", "createdAt")
        VALUES (p_conversation[i], r_seq, p_sender[i], p_client_msg_id[i], p_content[i], r_created_at)
        RETURNING "id" INTO r_id;
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
