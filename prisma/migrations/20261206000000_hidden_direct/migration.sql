-- Unwanted conversations (docs/security.md): starting a direct conversation put an empty row in the other person's
-- list at once, so anyone who knew a name could fill a stranger's list with empty rows (30 a minute). Now the other
-- member's membership starts hidden: their list leaves the conversation out while it has no message (lastSeq = 0),
-- and shows it from its first message on, or once they start the same conversation themselves (which clears it).
-- A constant default: no table rewrite, and existing memberships stay shown.
ALTER TABLE "Membership" ADD COLUMN "hidden" BOOLEAN NOT NULL DEFAULT false;
