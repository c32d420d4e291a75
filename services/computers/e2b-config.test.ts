// The E2B settings, the computers module's section of the configuration (config.ts): off without
// a key, defaults with one, and a clear stop, at start, for settings that cannot work.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../config.js";
import { ConfigError } from "../platform/config.js";
import { settingsOf } from "../platform/module.js";
import { computersModule } from "./module.js";

const e2bOf = (config: ReturnType<typeof loadConfig>) => settingsOf(config, computersModule).e2b;

describe("E2B configuration", () => {
  it("is off without E2B_API_KEY", () => {
    expect(e2bOf(loadConfig({}))).toBeUndefined();
  });

  it("defaults to E2B's public API and the base template", () => {
    const defaults = { apiUrl: "https://api.e2b.app", apiKey: "e2b_x", sandboxUrl: undefined, template: "base" };
    expect(e2bOf(loadConfig({ E2B_API_KEY: "e2b_x" }))).toEqual(defaults);
    const custom = {
      E2B_API_KEY: "e2b_x",
      E2B_API_URL: "http://127.0.0.1:9000/",
      E2B_SANDBOX_URL: "http://127.0.0.1:9001",
      E2B_TEMPLATE: "my-team/dev",
    };
    expect(e2bOf(loadConfig(custom))).toEqual({
      apiUrl: "http://127.0.0.1:9000",
      apiKey: "e2b_x",
      sandboxUrl: "http://127.0.0.1:9001",
      template: "my-team/dev",
    });
  });

  it("stops with one line naming the variable for settings that cannot work", () => {
    expect(() => loadConfig({ E2B_API_URL: "https://api.e2b.app" })).toThrow(
      new ConfigError("E2B_API_URL", "is set but E2B_API_KEY is not"),
    );
    expect(() => loadConfig({ E2B_API_KEY: "k", E2B_API_URL: "ftp://x" })).toThrow(
      /^invalid configuration: E2B_API_URL must use http: or https:/,
    );
    expect(() => loadConfig({ E2B_API_KEY: "k", E2B_SANDBOX_URL: "not a url" })).toThrow(
      /^invalid configuration: E2B_SANDBOX_URL is not a valid URL/,
    );
    expect(() => loadConfig({ E2B_API_KEY: "k", E2B_TEMPLATE: "bad name" })).toThrow(
      /^invalid configuration: E2B_TEMPLATE /,
    );
  });
});
