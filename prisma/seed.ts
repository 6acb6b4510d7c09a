import type { Db } from "../server/db/prisma.ts";
import { isUniqueViolation } from "../server/db/unique.ts";
import { hashPassword } from "../server/sessions/password.ts";
import { DEMO_PASSWORD, demoConversations, demoUsers } from "./seed-data.ts";

/**
 * Creates the demo users (password DEMO_PASSWORD) and conversations once: when alice already exists, nothing
 * is written but a missing demo password (a data directory from before passwords). Counters need no seeding:
 * Redis state is rebuilt from these rows on first touch.
 */
export async function seedDemo(db: Db, now = Date.now()): Promise<boolean> {
  const passwordHash = await hashPassword(DEMO_PASSWORD);
  if (await db.user.findUnique({ where: { name: "alice" } })) {
    await db.user.updateMany({ where: { name: { in: demoUsers }, passwordHash: null }, data: { passwordHash } });
    return false;
  }
  // Two instances started at once on an empty database both find no alice: the second's transaction hits the
  // unique name and rolls back, and the other has seeded (an operator's walkthrough: that instance crashed).
  const seeded = await db
    .$transaction(async (tx) => {
      const ids = new Map<string, number>();
      for (const name of demoUsers) ids.set(name, (await tx.user.create({ data: { name, passwordHash } })).id);
      const id = (name: string) => ids.get(name)!;

      let minutesAgo = demoConversations.reduce((n, c) => n + c.messages.length, 0) * 7;
      for (const c of demoConversations) {
        const memberIds = c.members.map(id);
        const times = c.messages.map(() => new Date(now - (minutesAgo -= 7) * 60_000));
        const conv = await tx.conversation.create({
          data: {
            kind: c.kind,
            title: c.title ?? null,
            directKey: c.kind === "direct" ? [...memberIds].sort((a, b) => a - b).join(":") : null,
            lastSeq: c.messages.length,
            // The list's order: its newest message's time (the migration 20261127000000_conversation_activity).
            ...(c.messages.length > 0 ? { lastActivityAt: times[c.messages.length - 1]! } : {}),
            createdById: id(c.members[0]!),
            memberships: {
              create: c.members.map((name) => {
                const ownLast = c.messages.reduce((last, [sender], i) => (sender === name ? i + 1 : last), 0);
                return { userId: id(name), lastReadSeq: Math.max(ownLast, c.readUpTo?.[name] ?? 0) };
              }),
            },
          },
        });
        await tx.message.createMany({
          data: c.messages.map(([sender, content], i) => ({
            conversationId: conv.id,
            seq: i + 1,
            senderId: id(sender),
            clientMsgId: `seed-${conv.id}-${i + 1}`,
            content,
            createdAt: times[i]!,
          })),
        });
      }
    })
    .then(
      () => true,
      (err: unknown) => {
        if (isUniqueViolation(err)) return false;
        throw err;
      },
    );
  return seeded;
}
