// Frozen: never edit a migration once it has been merged; add a new one.
//
// Two changes to the sessions request path (issue #9):
//
// 1. Every session records the root of its tree (its own ID for a top-level session), so the
//    sessions whose usage rolls up into a session's inclusive usage are found by an index on
//    root_id instead of a recursive walk that scanned the organization's sessions on every read.
//    A session's parent is fixed at creation, so its root never changes.
//
// 2. Session paging takes its snapshot from Postgres' own MVCC snapshot instead of a
//    per-organization list clock (session_list_clocks), whose row lock serialised every session
//    write of an organization until commit. A change records the ID of the transaction that made
//    it (list_xid on the session, old_xid/new_xid on its history row); a listing keeps the
//    pg_snapshot its first page was read in and asks pg_visible_in_snapshot (list-queries.ts).
//
// Old pods keep serving during a rollout (README, "Rolling out a schema migration"), so the
// previous release must go on working: its inserts do not know root_id, and its writes keep
// taking the list clock and leave list_xid/old_xid alone. A trigger fills in what it leaves out,
// its history rows may leave old_xid/new_xid to the trigger and the default, and the clock's
// columns stay (list_version defaults to 0 for the new release's inserts, so an old pod's listing
// shows those sessions, at their current place). A later migration, once no pod of the previous
// release runs, drops the triggers, session_list_clocks and the version columns.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table sessions add column root_id text`.execute(db);
  await sql`
    with recursive tree as (
      select id, id as root_id from sessions where parent_session_id is null
      union all
      select s.id, t.root_id from sessions s join tree t on s.parent_session_id = t.id
    )
    update sessions s set root_id = tree.root_id from tree where s.id = tree.id`.execute(db);
  // Parents must exist before their children, so every session is reached from a root; this only
  // keeps a corrupted row (a parent cycle) from failing the migration: it becomes its own root.
  await sql`update sessions set root_id = id where root_id is null`.execute(db);
  await sql`alter table sessions alter column root_id set not null`.execute(db);
  await sql`create index sessions_root on sessions (root_id)`.execute(db);

  // Existing positions were written by transactions that committed before any listing that uses
  // the new columns, so this migration's own transaction ID stands for all of them. The default
  // also serves inserts by processes of the previous release during the rolling update.
  await sql`alter table sessions add column list_xid xid8 not null default pg_current_xact_id()`.execute(db);
  await sql`alter table sessions alter column list_version set default 0`.execute(db);
  await sql`alter table session_list_history add column old_xid xid8, add column new_xid xid8 not null default pg_current_xact_id()`.execute(
    db,
  );
  await sql`update session_list_history set old_xid = pg_current_xact_id()`.execute(db);
  await sql`alter table session_list_history alter column old_xid set not null`.execute(db);
  await sql`alter table session_list_history alter column old_version drop not null, alter column new_version drop not null`.execute(
    db,
  );
  await sql`drop index session_list_history_org_new`.execute(db);
  await sql`create index session_list_history_org_new_xid on session_list_history (org_id, new_xid)`.execute(db);

  // For the previous release only (see above); the new release sets these columns itself.
  await sql`
    create function sessions_fill_previous_release() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        -- As insertSession does it: a parent outside the organization leaves null, which the column refuses.
        if new.root_id is null and new.parent_session_id is null then
          new.root_id := new.id;
        elsif new.root_id is null then
          new.root_id := (select p.root_id from sessions p where p.id = new.parent_session_id and p.org_id = new.org_id);
        end if;
      elsif new.updated_at is distinct from old.updated_at and new.list_xid = old.list_xid then
        new.list_xid := pg_current_xact_id();
      end if;
      return new;
    end $$`.execute(db);
  await sql`create trigger sessions_fill_previous_release before insert or update on sessions
            for each row execute function sessions_fill_previous_release()`.execute(db);
  // The previous release writes the history row before it updates the session: list_xid is still the old position's.
  await sql`
    create function session_list_history_fill_previous_release() returns trigger language plpgsql as $$
    begin
      if new.old_xid is null then
        new.old_xid := (select s.list_xid from sessions s where s.id = new.session_id);
      end if;
      return new;
    end $$`.execute(db);
  await sql`create trigger session_list_history_fill_previous_release before insert on session_list_history
            for each row execute function session_list_history_fill_previous_release()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger session_list_history_fill_previous_release on session_list_history`.execute(db);
  await sql`drop function session_list_history_fill_previous_release()`.execute(db);
  await sql`drop trigger sessions_fill_previous_release on sessions`.execute(db);
  await sql`drop function sessions_fill_previous_release()`.execute(db);
  await sql`drop index session_list_history_org_new_xid`.execute(db);
  await sql`create index session_list_history_org_new on session_list_history (org_id, new_version)`.execute(db);
  await sql`delete from session_list_history where old_version is null or new_version is null`.execute(db);
  await sql`alter table session_list_history drop column old_xid, drop column new_xid`.execute(db);
  await sql`alter table session_list_history alter column old_version set not null, alter column new_version set not null`.execute(
    db,
  );
  await sql`alter table sessions alter column list_version drop default`.execute(db);
  await sql`alter table sessions drop column list_xid`.execute(db);
  await sql`drop index sessions_root`.execute(db);
  await sql`alter table sessions drop column root_id`.execute(db);
}
