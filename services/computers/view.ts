// The public shape of a computer (docs/interface.md §2.10): rows → Computer message init. Unix-ms doubles for
// times; optional fields are left out while they have no value (a hostname exists only once the
// host has registered).
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ComputerSchema } from "../../gen/agentplane/computers/v1alpha1/computers_pb.js";
import type { ComputerRow, StepRow } from "./queries.js";

export type ComputerView = MessageInitShape<typeof ComputerSchema>;

const ms = (d: Date | null): number | undefined => (d === null ? undefined : d.getTime());
const opt = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

export function toComputer(row: ComputerRow, steps: readonly StepRow[]): ComputerView {
  return {
    id: row.id,
    name: row.name,
    providerType: row.provider_type,
    createdAt: row.created_at.getTime(),
    hostId: opt(row.host_id),
    hostname: opt(row.hostname),
    status: row.status,
    provisioningSteps: steps.map((s) => ({
      id: s.id,
      name: s.name,
      status: s.status,
      error: opt(s.error),
      startedAt: ms(s.started_at),
      completedAt: ms(s.completed_at),
      installSessionId: opt(s.install_session_id),
    })),
    relayClientUrl: opt(row.relay_client_url),
    relayAgentUrl: opt(row.relay_agent_url),
    remoteUser: row.remote_user,
  };
}
