-- Conversation.lastMessageAt was written on every send and never read: the list orders by the last message.

-- AlterTable
ALTER TABLE "Conversation" DROP COLUMN "lastMessageAt";
