import { describe, expect, it } from "vitest";
import { fieldsAtFault } from "./login-errors";

describe("which sign-in fields a refusal marks", () => {
  it("marks the field the server names, both for a wrong name or password, none for anything else", () => {
    expect(fieldsAtFault({ code: "conflict", field: "name" })).toEqual({ name: true, password: false });
    expect(fieldsAtFault({ code: "invalid", field: "password" })).toEqual({ name: false, password: true });
    expect(fieldsAtFault({ code: "unauthorized" })).toEqual({ name: true, password: true });
    for (const code of ["rate_limited", "unavailable", "invalid"] as const) {
      expect(fieldsAtFault({ code }), code).toEqual({ name: false, password: false });
    }
    // A field the form does not have (a hand-made request's extra key) marks none of its own.
    expect(fieldsAtFault({ code: "invalid", field: "admin" })).toEqual({ name: false, password: false });
  });
});
