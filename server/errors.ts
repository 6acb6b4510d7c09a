import type { z } from "zod";
import type { ApiError, ErrorCode } from "./contracts/index.ts";

/** An error the caller may see: its code is part of the public contract, its message is safe to show. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** With `rate_limited`: when the same call can succeed again. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = "AppError";
  }
}

export const httpStatus: Record<ErrorCode, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unsupported_media_type: 415,
  rate_limited: 429,
  unavailable: 503,
};

/** Anything else becomes `unavailable` without leaking internals; the caller logs the original. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof AppError) {
    return err.retryAfterMs === undefined
      ? { code: err.code, message: err.message }
      : { code: err.code, message: err.message, retryAfterMs: err.retryAfterMs };
  }
  return { code: "unavailable", message: "The service is temporarily unavailable; try again." };
}

/** Parses untrusted input with one of the contract's schemas, or throws `invalid` naming the first problem. */
export function parse<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  throw new AppError("invalid", `${where}${issue?.message ?? "invalid input"}`);
}
