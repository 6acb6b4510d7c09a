import type { ApiError } from "@/server/contracts";

/** The sign-in form's fields, and whether the last refusal is about each. */
export interface FieldsAtFault {
  name: boolean;
  password: boolean;
}

export const NONE_AT_FAULT: FieldsAtFault = { name: false, password: false };

/**
 * The fields a refusal is about: the one the server names (a taken name, a short password), both for a wrong name or
 * password (it does not say which), none for a refusal about neither (too many attempts, the server unavailable).
 */
export function fieldsAtFault(error: Pick<ApiError, "code" | "field">): FieldsAtFault {
  if (error.field === "name" || error.field === "password") return { ...NONE_AT_FAULT, [error.field]: true };
  if (error.code === "unauthorized") return { name: true, password: true };
  return NONE_AT_FAULT;
}
