// Table types of the computers area: computers and their provisioning steps.
import type { ColumnType } from "kysely";

/** A timestamp the database fills in on insert unless given. */
type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export type ProviderType = "byom" | "e2b";
export type ComputerStatus = "provisioning" | "active" | "error";
export type StepKind = "register_host" | "create_sandbox" | "clone_repo" | "install_deps";
export type StepStatus = "pending" | "running" | "succeeded" | "failed" | "skipped";

export interface ComputersTable {
  id: string;
  org_id: string;
  /** Unique within the organization: GET /computers/name/{name} finds exactly one. */
  name: string;
  provider_type: ProviderType;
  /** A UUID, unique across organizations: a host registers by it (HostService.RegisterHost). */
  host_id: string | null;
  hostname: string | null;
  status: ComputerStatus;
  relay_client_url: string | null;
  relay_agent_url: string | null;
  remote_user: string;
  /** The repository URLs given at creation, in order. */
  repos: ColumnType<string[], string, string>;
  auto_install_deps: boolean;
  /** The E2B sandbox once the create-sandbox step has succeeded. */
  sandbox_id: string | null;
  sandbox_domain: string | null;
  /** The provisioning worker holding this computer, until lease_expires_at (a dead worker's lease lapses). */
  lease_owner: string | null;
  lease_expires_at: NullableTimestamp;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

export interface ComputerProvisioningStepsTable {
  id: string;
  computer_id: string;
  org_id: string;
  /** Order of execution within the computer, from 0. */
  position: number;
  kind: StepKind;
  name: string;
  /** clone_repo and install_deps: the repository and the directory it is cloned into. */
  repo_url: string | null;
  repo_dir: string | null;
  status: StepStatus;
  error: string | null;
  /** How many times a worker started this step (more than 1 only after a worker died mid-step). */
  attempts: ColumnType<number, number | undefined, number>;
  started_at: NullableTimestamp;
  completed_at: NullableTimestamp;
  install_session_id: string | null;
}

/** A deleted e2b computer whose sandboxes are still to be stopped (migration 0023). */
export interface ComputerSandboxReapsTable {
  computer_id: string;
  org_id: string;
  /** The sandbox the computer had recorded, if any; others are found by their metadata. */
  sandbox_id: string | null;
  attempts: ColumnType<number, number | undefined, number>;
  /** When the worker looks next: at once, after a failure later, and once more after the first stop. */
  next_attempt_at: CreatedAt;
  last_error: string | null;
  created_at: CreatedAt;
}

export interface ComputerTables {
  computers: ComputersTable;
  computer_sandbox_reaps: ComputerSandboxReapsTable;
  computer_provisioning_steps: ComputerProvisioningStepsTable;
}
