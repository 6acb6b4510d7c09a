-- Departures (docs/consistency.md, "Leaving a group, deleting a conversation"): who left which conversation, or
-- lost it to a deletion, written in the same statement as the membership change. A rebuild of the user's
-- counters marks these conversations "gone", so an event computed before the departure cannot bring one back
-- after Redis lost remove.lua's own mark. No foreign key to the conversation: a departure outlives it.

-- CreateTable
CREATE TABLE "Departure" (
    "userId" INTEGER NOT NULL,
    "conversationId" INTEGER NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Departure_pkey" PRIMARY KEY ("userId","conversationId")
);

-- CreateIndex
CREATE INDEX "Departure_at_idx" ON "Departure"("at");

-- AddForeignKey
ALTER TABLE "Departure" ADD CONSTRAINT "Departure_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;
