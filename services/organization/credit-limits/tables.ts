// Table types of per-user credit limits (docs/interface.md §2.12, §4.5).
import type { ColumnType } from "kysely";

export interface UserCreditLimitsTable {
  org_id: string;
  user_id: string;
  /** Standard Credits per calendar month (UTC); finite and >= 0. */
  monthly_limit: number;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  /** The user who last set it. */
  updated_by: string | null;
}

export interface CreditLimitTables {
  user_credit_limits: UserCreditLimitsTable;
}
