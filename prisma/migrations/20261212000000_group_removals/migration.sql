-- A group's creator removing a member (DELETE /api/conversations/:id/members/:userId). For the counters a removal is
-- the member's leave: the membership goes, with a Departure and a "remove" outbox entry, in one transaction
-- (server/conversations/conversations.service.ts). Its GroupLeave row names who removed them, for the group's history
-- ("carol removed dave"); NULL for a member who left by themselves (and, were accounts ever deleted, for one whose
-- remover's account went: accounts are not deleted today).

ALTER TABLE "GroupLeave" ADD COLUMN "removedById" INTEGER;

ALTER TABLE "GroupLeave" ADD CONSTRAINT "GroupLeave_removedById_fkey" FOREIGN KEY ("removedById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;
