import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { boundedMessage, DomainError, invalidArgument, MAX_ERROR_MESSAGE_LENGTH, toConnectError } from "./errors.js";

describe("error messages", () => {
  it("keeps a message up to the bound as it is", () => {
    const m = "x".repeat(MAX_ERROR_MESSAGE_LENGTH);
    expect(boundedMessage(m)).toBe(m);
    expect(boundedMessage("field: problem")).toBe("field: problem");
  });

  it("cuts a longer one to the bound, saying so, never inside a surrogate pair", () => {
    const cut = boundedMessage(`name: ${"a".repeat(5_000)}`);
    expect(cut.length).toBe(MAX_ERROR_MESSAGE_LENGTH);
    expect(cut).toMatch(/^name: a+… \(message truncated\)$/);
    for (let shift = 0; shift < 4; shift++) {
      const emoji = boundedMessage("x".repeat(shift) + "😀".repeat(2_000));
      expect(emoji.length).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_LENGTH);
      // No lone surrogate: the UTF-8 round trip keeps it.
      expect(Buffer.from(emoji, "utf8").toString("utf8")).toBe(emoji);
    }
  });

  it("bounds what toConnectError returns for domain errors and for ConnectErrors, keeping code and headers", () => {
    const domain = toConnectError(invalidArgument("apps", "x".repeat(100_000)));
    expect(domain.error.code).toBe(Code.InvalidArgument);
    expect(domain.error.rawMessage.length).toBe(MAX_ERROR_MESSAGE_LENGTH);
    expect(domain.error.rawMessage.startsWith("apps: xxx")).toBe(true);

    const withHeaders = toConnectError(
      new DomainError("resource_exhausted", "y".repeat(2_000), { "retry-after": "3" }),
    );
    expect(withHeaders.error.metadata.get("retry-after")).toBe("3");
    expect(withHeaders.error.rawMessage.length).toBe(MAX_ERROR_MESSAGE_LENGTH);

    const thrown = new ConnectError(`unknown service ${"%".repeat(300_000)}`, Code.NotFound);
    thrown.metadata.set("x-request-id", "r1");
    const mapped = toConnectError(thrown);
    expect(mapped).toMatchObject({ internal: false });
    expect(mapped.error.code).toBe(Code.NotFound);
    expect(mapped.error.metadata.get("x-request-id")).toBe("r1");
    expect(mapped.error.rawMessage.length).toBe(MAX_ERROR_MESSAGE_LENGTH);

    const short = new ConnectError("short", Code.NotFound);
    expect(toConnectError(short).error).toBe(short);
  });
});
