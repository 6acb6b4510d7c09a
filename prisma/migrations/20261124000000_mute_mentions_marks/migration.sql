-- Mute, mentions and mark as unread (docs/consistency.md, "Mute, mentions and mark as unread").
-- Mute and mark are versioned registers on the membership: the database numbers each change, Redis keeps the
-- highest. A mention is stored with its message, one row per mentioned member.

-- AlterEnum
ALTER TYPE "OutboxKind" ADD VALUE 'state';

-- AlterTable
ALTER TABLE "Membership" ADD COLUMN     "muted" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "muteVersion" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "markVersion" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "markAt" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "markClearedVersion" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "Mention" (
    "userId" INTEGER NOT NULL,
    "conversationId" INTEGER NOT NULL,
    "seq" INTEGER NOT NULL,

    CONSTRAINT "Mention_pkey" PRIMARY KEY ("userId","conversationId","seq")
);

-- CreateIndex
CREATE INDEX "Mention_conversationId_seq_idx" ON "Mention"("conversationId", "seq");

-- AddForeignKey
ALTER TABLE "Mention" ADD CONSTRAINT "Mention_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Mention" ADD CONSTRAINT "Mention_conversationId_fkey" FOREIGN KEY ("conversationId") REFERENCES "Conversation"("id") ON DELETE CASCADE ON UPDATE CASCADE;
