// A query built and compiled by Kysely once, then run with new arguments: on a hot read path
// Kysely otherwise rebuilds the operation tree (freezing every node) and compiles it to SQL on
// every call, about a tenth of the service's CPU per GetSession through the REST edge.
//
// The query is built once with a placeholder per argument (strings no caller can send: they hold
// NUL, which Postgres text refuses); the compiled parameters are then mapped back to argument
// positions, and constants the builder added stay as they are. Only for queries whose shape does
// not depend on the argument values (each variant of a query gets its own compiled form).
import { CompiledQuery, type Compilable, type Kysely, type QueryResult, type Transaction } from "kysely";

/** A compiled parameter: the caller's argument at this index, or a constant of the query. */
type Slot = { arg: number } | { value: unknown };

const placeholder = (i: number) => `\u0000compiled-query-argument-${i}\u0000`;

export function compiledQuery<DB, Row, Args extends unknown[]>(
  arity: Args["length"],
  build: (db: Kysely<DB> | Transaction<DB>, ...args: Args) => Compilable<Row>,
): (db: Kysely<DB> | Transaction<DB>, ...args: Args) => Promise<QueryResult<Row>> {
  let compiled: { sql: string; slots: Slot[] } | undefined;
  return async (db, ...args) => {
    if (args.length !== arity) throw new Error(`compiledQuery: expected ${arity} arguments, got ${args.length}`);
    if (compiled === undefined) {
      const placeholders = Array.from({ length: arity }, (_, i) => placeholder(i));
      const query = build(db, ...(placeholders as Args)).compile();
      const slots = query.parameters.map((p): Slot => {
        const i = typeof p === "string" ? placeholders.indexOf(p) : -1;
        return i === -1 ? { value: p } : { arg: i };
      });
      const used = new Set(slots.flatMap((s) => ("arg" in s ? [s.arg] : [])));
      if (used.size !== arity) throw new Error(`compiledQuery: ${arity - used.size} argument(s) never reach the query`);
      compiled = { sql: query.sql, slots };
    }
    const { sql, slots } = compiled;
    const parameters = slots.map((s) => ("arg" in s ? args[s.arg] : s.value));
    return await db.executeQuery<Row>(CompiledQuery.raw(sql, parameters));
  };
}
