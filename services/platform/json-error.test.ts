import { describe, expect, it } from "vitest";
import {
  UpdateSessionRequestSchema,
  PostMessageRequestSchema,
} from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { locateJsonError } from "./json-error.js";

describe("locateJsonError", () => {
  it("names nested fields by their JSON path and the JSON type they need", () => {
    expect(locateJsonError(UpdateSessionRequestSchema, { sessionSettings: { tags: "x" } })).toBe(
      "sessionSettings.tags: must be an array",
    );
    expect(locateJsonError(UpdateSessionRequestSchema, { sessionSettings: { assistantActiveTimeMs: "soon" } })).toBe(
      "sessionSettings.assistantActiveTimeMs: must be a number",
    );
    expect(
      locateJsonError(UpdateSessionRequestSchema, { sessionSettings: { childInclusiveTokenUsageBySessionId: [] } }),
    ).toBe("sessionSettings.childInclusiveTokenUsageBySessionId: must be an object");
    expect(locateJsonError(UpdateSessionRequestSchema, { sessionSettings: { colour: "red" } })).toBe(
      "sessionSettings.colour: unknown field",
    );
  });

  it("indexes into arrays of messages", () => {
    expect(locateJsonError(PostMessageRequestSchema, { text: "hi", images: [{ data: "aGk=" }, { data: 5 }] })).toBe(
      "images[1].data: must be a string",
    );
    expect(locateJsonError(PostMessageRequestSchema, { text: "hi", images: ["x"] })).toBe(
      "images[0]: must be an object",
    );
  });

  it("finds nothing wrong in a readable body, and rejects a body that is not an object", () => {
    expect(locateJsonError(PostMessageRequestSchema, { text: "hi", session_id: "s" })).toBeUndefined();
    expect(locateJsonError(PostMessageRequestSchema, [1])).toBe("body: must be an object");
  });
});
