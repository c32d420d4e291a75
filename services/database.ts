// The whole schema as kysely sees it: each area keeps its table types in its own tables.ts;
// this file only composes them. Repository functions take `Executor` (a Kysely or a
// transaction), so they run alone or inside a caller's transaction.
import type { Kysely, Transaction } from "kysely";
import type { AnalyticsTables } from "./analytics/tables.js";
import type { ComputerTables } from "./computers/tables.js";
import type { CreditLimitTables } from "./organization/credit-limits/tables.js";
import type { OrganizationTables } from "./organization/tables.js";
import type { ReadinessTables } from "./readiness/tables.js";
import type { SessionTables } from "./sessions/tables.js";

export interface Database
  extends OrganizationTables,
    AnalyticsTables,
    ReadinessTables,
    ComputerTables,
    CreditLimitTables,
    SessionTables {}

export type Executor = Kysely<Database> | Transaction<Database>;
