/** A unique-key violation, as Prisma reports it for model queries (P2002) or raw ones (PostgreSQL 23505). */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; message?: unknown; meta?: { code?: unknown }; cause?: unknown };
  if (e.code === "P2002" || e.code === "23505" || e.meta?.code === "23505") return true;
  if (typeof e.message === "string" && /23505|unique constraint/i.test(e.message)) return true;
  return e.cause !== undefined && e.cause !== err && isUniqueViolation(e.cause);
}
