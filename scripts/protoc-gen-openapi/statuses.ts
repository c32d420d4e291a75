// The HTTP statuses of each route. Success: by the method's shape, as the handlers set them with
// x-http-code (AIP-style: Create* answers 201, a method answering google.protobuf.Empty 204, the
// rest 200). Errors: those every authenticated call can meet, plus what a route's shape brings
// (a path names a resource: 404; a body: 413 and 415) and the conflicts a few methods report.
// test/openapi-contract.test.ts checks real answers against these.
import type { DescMethod } from "@bufbuild/protobuf";
import type { RestRoute } from "./routes.js";

/** Every call: bad input, credentials, rate limit (429; 503 when its counter store is down), failure. */
const ALWAYS = [400, 401, 429, 500, 503];

/** Services whose callers cannot be refused for their role or scope (readiness: any API key). */
const NO_FORBIDDEN = new Set(["agentplane.readiness.v1.ReadinessService"]);

/** Methods that answer 409: a name or host already taken, a state that forbids it, a reused Idempotency-Key. */
const CONFLICTS = new Set([
  "agentplane.computers.v1alpha1.ComputerService.CreateComputer",
  "agentplane.computers.v1alpha1.ComputerService.UpdateComputer",
  "agentplane.computers.v1alpha1.ComputerService.DeleteComputer",
  "agentplane.computers.v1alpha1.ComputerService.RetryComputerProvisioning",
  "agentplane.sessions.v1alpha1.SessionService.PostMessage",
  "agentplane.sessions.v1alpha1.SessionService.CreateSession",
  "agentplane.organization.v1alpha1.OrganizationService.CreateWebhook",
]);

/** Services that answer 304 to an If-None-Match naming the current ETag (analytics caching). */
const CONDITIONAL = new Set(["agentplane.analytics.v1.AnalyticsService"]);

export function successStatus(method: DescMethod): number {
  if (method.output.typeName === "google.protobuf.Empty") return 204;
  if (method.name.startsWith("Create")) return 201;
  return 200;
}

/** 304 where the service honours If-None-Match; none elsewhere. */
export function notModified(route: RestRoute): boolean {
  return CONDITIONAL.has(route.service.typeName);
}

export function errorStatuses(route: RestRoute): number[] {
  const statuses = new Set(ALWAYS);
  if (!NO_FORBIDDEN.has(route.service.typeName)) statuses.add(403);
  if (route.pathFields.length > 0) statuses.add(404);
  if (CONFLICTS.has(`${route.service.typeName}.${route.method.name}`)) statuses.add(409);
  if (route.body !== undefined) {
    statuses.add(413);
    statuses.add(415);
  }
  return [...statuses].sort((a, b) => a - b);
}
