import { describe, expect, it } from "vitest";
import { loadConfig } from "../config.js";

describe("WORKERS", () => {
  it("defaults to running the workers; true and false are the only values", () => {
    expect(loadConfig({}).workers).toBe(true);
    expect(loadConfig({ WORKERS: "" }).workers).toBe(true);
    expect(loadConfig({ WORKERS: "true" }).workers).toBe(true);
    expect(loadConfig({ WORKERS: "false" }).workers).toBe(false);
    for (const bad of ["0", "no", "FALSE", "off"])
      expect(() => loadConfig({ WORKERS: bad }), bad).toThrow(
        `invalid configuration: WORKERS must be true or false, got "${bad}"`,
      );
  });
});

describe("EDGE_MAX_CONNECTIONS", () => {
  it("defaults to 1024 and must be a whole number from 1 to 1 000 000", () => {
    expect(loadConfig({}).edgeMaxConnections).toBe(1024);
    expect(loadConfig({ EDGE_MAX_CONNECTIONS: "" }).edgeMaxConnections).toBe(1024);
    expect(loadConfig({ EDGE_MAX_CONNECTIONS: "20" }).edgeMaxConnections).toBe(20);
    for (const bad of ["0", "-1", "1.5", "many", "1000001", "1e3"]) {
      expect(() => loadConfig({ EDGE_MAX_CONNECTIONS: bad }), bad).toThrow(
        `invalid configuration: EDGE_MAX_CONNECTIONS must be a whole number from 1 to 1000000, got "${bad}"`,
      );
    }
  });
});
