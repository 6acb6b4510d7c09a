import { z } from "zod";
import { AppError } from "./errors.ts";
import { userName } from "./sessions/sessions.service.ts";

const id = z.number().int().positive().max(2_147_483_647);
const seq = z.number().int().min(0).max(2_147_483_647);

export const sendInput = z.strictObject({
  conversationId: id,
  clientMsgId: z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, "clientMsgId is 1–64 of [A-Za-z0-9_.:-]"),
  content: z.string().trim().min(1, "A message needs some text.").max(4000, "A message is at most 4000 characters."),
});

export const readInput = z.strictObject({ conversationId: id, seq });

export const signInInput = z.strictObject({ name: userName });

export const createConversationInput = z.strictObject({
  memberNames: z.array(userName).min(1, "Name at least one other member.").max(50),
  title: z.string().trim().max(64).optional(),
});

const queryInt = (min: number) => z.coerce.number().int().min(min).max(2_147_483_647);
export const historyQuery = z
  .strictObject({
    before: queryInt(1).optional(),
    after: queryInt(0).optional(),
    limit: queryInt(1).max(200).default(50),
  })
  .refine((q) => q.before === undefined || q.after === undefined, "Use either before or after, not both.");

export const conversationIdParam = z.coerce.number().int().positive().max(2_147_483_647);

/** Parses untrusted input or throws `invalid` naming the first problem. */
export function parse<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  throw new AppError("invalid", `${where}${issue?.message ?? "invalid input"}`);
}
