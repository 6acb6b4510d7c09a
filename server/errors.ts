import type { ApiError, ErrorCode } from "./contracts/index.ts";

/** An error the caller may see: its code is part of the public contract, its message is safe to show. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
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
  rate_limited: 429,
  unavailable: 503,
};

/** Anything else becomes `unavailable` without leaking internals; the caller logs the original. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof AppError) return { code: err.code, message: err.message };
  return { code: "unavailable", message: "The service is temporarily unavailable; try again." };
}
