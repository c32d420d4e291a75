// Reading a report from its JSON form (docs/interface.md §2.7), as `agentplane readiness submit FILE.json`
// gets it. Unlike protobuf's JSON reader, which stops at the first bad field, this one collects
// every type problem, so the file's author sees them all at once alongside validation's.
import { create } from "@bufbuild/protobuf";
import { ReadinessReportSchema, type ReadinessReport } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import { item, member } from "./field-path.js";
import type { Problem } from "./validation.js";

type JsonObject = Record<string, unknown>;

// Fields the service computes; a report read back from the API may carry them, so they are
// accepted and ignored rather than refused.
const COMPUTED = new Set(["score", "changesSincePrevious"]);
const FIELDS = new Set([
  "reportId",
  "createdAt",
  "repoUrl",
  "apps",
  "report",
  "commitHash",
  "branch",
  "hasLocalChanges",
  "hasNonRemoteCommits",
  "modelUsed",
  "droidVersion",
]);

const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);
const typeName = (v: unknown): string =>
  v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`;

export interface ReadReport {
  report: ReadinessReport;
  problems: Problem[];
}

class Reader {
  readonly problems: Problem[] = [];
  add(field: string, problem: string): void {
    this.problems.push({ field, problem });
  }
  /** A required or optional value of one JSON type; undefined when absent or wrong (and noted). */
  value<T>(
    obj: JsonObject,
    key: string,
    path: string,
    type: "string" | "number" | "boolean",
    required: boolean,
  ): T | undefined {
    const v = obj[key];
    if (v === undefined || (v === null && !required)) {
      if (required) this.add(path, "is required");
      return undefined;
    }
    if (typeof v !== type) {
      this.add(path, `must be a ${type}, got ${typeName(v)}`);
      return undefined;
    }
    return v as T;
  }
  /**
   * The entries of the required object `obj[key]`, keyed by `keyedBy`, whose values must be
   * objects with `shape`: each valid one with its key and path. A missing or mistyped map, and
   * each mistyped entry, is noted instead.
   */
  *objectsKeyedBy(
    obj: JsonObject,
    key: string,
    keyedBy: string,
    shape: string,
  ): Generator<[string, string, JsonObject]> {
    const map = obj[key];
    if (!isObject(map)) {
      const got =
        map === undefined
          ? `is required (an object keyed by ${keyedBy})`
          : `must be an object keyed by ${keyedBy}, got ${typeName(map)}`;
      this.add(key, got);
      return;
    }
    for (const [k, v] of Object.entries(map)) {
      const path = member(key, k);
      if (isObject(v)) yield [k, path, v];
      else this.add(path, `must be an object with ${shape}, got ${typeName(v)}`);
    }
  }
  unknownFields(obj: JsonObject, path: string, known: ReadonlySet<string>): void {
    for (const key of Object.keys(obj))
      if (!known.has(key) && !(path === "" && COMPUTED.has(key)))
        this.add(member(path, key), "is not a field of a readiness report");
  }
}

export function readReportJson(json: unknown): ReadReport {
  const r = new Reader();
  const report = create(ReadinessReportSchema);
  if (!isObject(json)) {
    r.add("(report)", `must be a JSON object, got ${typeName(json)}`);
    return { report, problems: r.problems };
  }
  r.unknownFields(json, "", FIELDS);

  report.reportId = r.value<string>(json, "reportId", "reportId", "string", false) ?? "";
  report.createdAt = r.value<number>(json, "createdAt", "createdAt", "number", false) ?? 0;
  report.repoUrl = r.value<string>(json, "repoUrl", "repoUrl", "string", true) ?? "";
  report.commitHash = r.value<string>(json, "commitHash", "commitHash", "string", false);
  report.branch = r.value<string>(json, "branch", "branch", "string", false);
  report.droidVersion = r.value<string>(json, "droidVersion", "droidVersion", "string", false);
  report.hasLocalChanges = r.value<boolean>(json, "hasLocalChanges", "hasLocalChanges", "boolean", false);
  report.hasNonRemoteCommits = r.value<boolean>(json, "hasNonRemoteCommits", "hasNonRemoteCommits", "boolean", false);

  for (const [path, appPath, app] of r.objectsKeyedBy(json, "apps", "application path", "a description")) {
    r.unknownFields(app, appPath, new Set(["description"]));
    report.apps[path] = {
      $typeName: "agentplane.readiness.v1.AppInfo",
      description: r.value<string>(app, "description", member(appPath, "description"), "string", true) ?? "",
    };
  }

  for (const [id, path, c] of r.objectsKeyedBy(
    json,
    "report",
    "criterion ID",
    "numerator, denominator and rationale",
  )) {
    r.unknownFields(c, path, new Set(["numerator", "denominator", "rationale", "appPaths"]));
    const numerator = r.value<number>(c, "numerator", member(path, "numerator"), "number", true);
    const denominator = r.value<number>(c, "denominator", member(path, "denominator"), "number", true);
    const rationale = r.value<string>(c, "rationale", member(path, "rationale"), "string", true);
    const appPaths: string[] = [];
    const appPathsPath = member(path, "appPaths");
    if (Array.isArray(c.appPaths)) {
      for (const [i, p] of c.appPaths.entries()) {
        if (typeof p === "string") appPaths.push(p);
        else r.add(item(appPathsPath, i), `must be a string, got ${typeName(p)}`);
      }
    } else if (c.appPaths !== undefined && c.appPaths !== null)
      r.add(appPathsPath, `must be an array of application paths, got ${typeName(c.appPaths)}`);
    // Missing or mistyped numbers read as valid placeholders: the reader has already named
    // them, and validation should not report them a second time under another complaint.
    report.report[id] = {
      $typeName: "agentplane.readiness.v1.CriterionEvaluation",
      numerator: numerator ?? 0,
      denominator: denominator ?? (appPaths.length > 0 ? appPaths.length : Math.max(1, numerator ?? 1)),
      rationale: rationale ?? "",
      appPaths,
    };
  }

  if (json.modelUsed !== undefined && json.modelUsed !== null) {
    if (!isObject(json.modelUsed))
      r.add("modelUsed", `must be an object with id and reasoningEffort, got ${typeName(json.modelUsed)}`);
    else {
      r.unknownFields(json.modelUsed, "modelUsed", new Set(["id", "reasoningEffort"]));
      report.modelUsed = {
        $typeName: "agentplane.readiness.v1.ModelUsed",
        id: r.value<string>(json.modelUsed, "id", "modelUsed.id", "string", true) ?? "",
        reasoningEffort:
          r.value<string>(json.modelUsed, "reasoningEffort", "modelUsed.reasoningEffort", "string", true) ?? "",
      };
    }
  }
  return { report, problems: r.problems };
}
