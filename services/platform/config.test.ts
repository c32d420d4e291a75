import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";

describe("WORKERS", () => {
  it("defaults to running the workers; true and false are the only values", () => {
    expect(loadConfig({}).workers).toBe(true);
    expect(loadConfig({ WORKERS: "" }).workers).toBe(true);
    expect(loadConfig({ WORKERS: "true" }).workers).toBe(true);
    expect(loadConfig({ WORKERS: "false" }).workers).toBe(false);
    for (const bad of ["0", "no", "FALSE", "off"]) expect(() => loadConfig({ WORKERS: bad }), bad).toThrow(`invalid configuration: WORKERS must be true or false, got "${bad}"`);
  });
});
