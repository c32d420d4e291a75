// Unit tests of validation: the message of the 400 (a DomainError of kind invalid_argument) that
// a check throws, to compare with the text the client will read.
import { expect } from "vitest";
import { DomainError } from "../../services/platform/errors.js";

/** The message `fn` throws as an invalid_argument DomainError; fails the test for anything else. */
export function invalidArgumentMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).kind).toBe("invalid_argument");
    return (err as DomainError).message;
  }
  throw new Error("expected a 400 (invalid_argument)");
}
