-- A group's owner ("createdById": who may delete it and remove people from it) is handed on when the owner leaves
-- (server/conversations/conversations.service.ts, leave and heirOf): to the member with the lowest seq joined at
-- ("joinedSeq"; everyone who started the group has 0), the oldest account among equals. Groups whose creator left
-- before that rule had no owner among their members; this gives them one by the same rule, or none when nobody is
-- left. Safe to run again (after a rolling restart, during which the release before does not hand groups on).

UPDATE "Conversation" c
SET "createdById" = (
    SELECT mb."userId" FROM "Membership" mb
    WHERE mb."conversationId" = c."id"
    ORDER BY mb."joinedSeq", mb."userId"
    LIMIT 1
)
WHERE c."kind" = 'group'
  AND NOT EXISTS (SELECT 1 FROM "Membership" o WHERE o."conversationId" = c."id" AND o."userId" = c."createdById");
