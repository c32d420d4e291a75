// Demo sessions: the sessions of the demo story (demo-story.ts) — the very sessions the analytics
// demo counts, with the same IDs, times and user and assistant messages — each with a title and
// a conversation made from parts (what was asked, what the agent read, edited and ran, as the
// story's tool calls and file operations say), the token usage of its model calls, and its
// computer (the founder's terminal sessions run on the demo workstation, web and scripted ones in
// the demo sandbox); now and then a subagent child session found the code for the first question.
// Today the first user's question waits for a runner (status pending). Row IDs derive from the
// story, so running it twice writes each session once (and a later run adds only the new days).
//
// It writes rows directly, in batches (the telemetry is the analytics demo's part of the story).
import type { Insertable, Kysely } from "kysely";
import type { Database } from "../database.js";
import { DEMO_SANDBOX, DEMO_WORKSTATION, writeComputersDemo } from "../computers/demo.js";
import { findComputerByName } from "../computers/queries.js";
import {
  demoFraction,
  demoStory,
  demoUuid,
  sessionsOf,
  subagentIdOf,
  type StorySession,
  type StoryTurn,
} from "../demo-story.js";
import type { DemoOptions } from "../platform/module.js";
import type { MessagesTable, SessionsTable, StoredSettings } from "./tables.js";

const DEMO_TAG = "demo";
/** Rows per insert statement. */
const BATCH = 500;

const ACTIONS = [
  "Fix",
  "Add",
  "Refactor",
  "Speed up",
  "Document",
  "Test",
  "Clean up",
  "Investigate",
  "Harden",
  "Simplify",
  "Rework",
  "Review",
];
const SUBJECTS = [
  "the flaky checkout test",
  "invoice pagination",
  "the retry logic",
  "session timeout handling",
  "the CSV export",
  "search ranking",
  "the rate limiter",
  "webhook signatures",
  "feature flags",
  "the login redirect",
  "image uploads",
  "the audit log",
  "date parsing",
  "cache invalidation",
  "validation errors",
  "the build cache",
  "the permissions check",
  "email templates",
  "the onboarding flow",
  "the nightly rollup",
];
const AREAS = [
  "in the billing service",
  "in the web app",
  "in the admin console",
  "in the payments API",
  "in the data pipelines",
  "in the CLI",
  "in the mobile API",
  "in the design system",
  "in the ingest jobs",
  "in the auth service",
];
const CONTEXTS = [
  "It started after yesterday's deploy.",
  "Keep the public API unchanged.",
  "Please add tests for it.",
  "Customers reported it twice this week.",
  "There is a ticket for it in Linear.",
  "Start by reading the existing code, then propose a plan.",
  "It only happens on large workspaces.",
  "The on-call engineer flagged it this morning.",
];
const FOLLOW_UPS = [
  "Looks good. Can you also cover the error path?",
  "Please run the whole test suite once more.",
  "Rename the helper to something clearer.",
  "Can you add a short note to the changelog?",
  "What about an empty list?",
  "Split that into two commits, please.",
  "Make the log message say which record failed.",
  "Good. Now update the README section too.",
  "Could this break the mobile client?",
  "Ship it.",
];
const CLOSINGS = [
  "All tests pass now.",
  "The change is ready for review.",
  "I left a comment where the old behaviour was relied on.",
  "Nothing else depends on it.",
  "The benchmark is unchanged.",
  "Type checks and lint are clean.",
];
const USER_MESSAGE_SOURCE: Record<string, string> = {
  "terminal-ui": "cli_tui",
  web: "web",
  "non-interactive-cli": "sessions_api",
};

function pickOf<T>(items: readonly T[], ...seed: string[]): T {
  return items[Math.floor(demoFraction(...seed) * items.length)]!;
}

/** A title made of an action, a subject and an area; one not used yet when a few tries find one. */
function titleOf(id: string, used: Set<string>): string {
  let title = "";
  for (let attempt = 0; attempt < 5; attempt++) {
    const n = String(attempt);
    title = `${pickOf(ACTIONS, id, "action", n)} ${pickOf(SUBJECTS, id, "subject", n)} ${pickOf(AREAS, id, "area", n)}`;
    if (!used.has(title)) break;
  }
  used.add(title);
  return title;
}

const quoted = (paths: readonly string[]) => paths.map((p) => `\`${p}\``).join(", ");

/** The agent's answer to a turn: what it did (the turn's tool calls and files), then the closing line. */
function answerOf(turn: StoryTurn, closing: string): string {
  const did: string[] = [];
  const reads = turn.tools.filter((t) => t === "Read").length;
  if (reads > 0) did.push(`read ${reads === 1 ? "one file" : `${reads} files`}`);
  if (turn.tools.some((t) => t === "Grep" || t === "Glob" || t === "LS")) did.push("searched the code");
  const created = turn.files.filter((f) => f.op === "created").map((f) => f.path);
  const edited = turn.files.filter((f) => f.op !== "created").map((f) => f.path);
  if (edited.length > 0) did.push(`edited ${quoted(edited)}`);
  if (created.length > 0) did.push(`created ${quoted(created)}`);
  if (turn.tools.includes("Bash")) did.push("ran the tests");
  if (turn.tools.some((t) => t === "WebSearch" || t === "FetchUrl")) did.push("checked the documentation");
  if (turn.tools.some((t) => t.includes("."))) did.push("looked up the linked issue");
  const summary = did.length > 0 ? `I ${did.join(", ")}. ` : "";
  return `${summary}${closing}`;
}

function questionOf(title: string, turn: number, seed: string): string {
  if (turn === 0) return `${title}. ${pickOf(CONTEXTS, seed, "context")}`;
  return pickOf(FOLLOW_UPS, seed, "follow-up", String(turn));
}

/** The most used of the session's models (the first on a tie). */
function mainModel(session: StorySession): string | undefined {
  const counts = new Map<string, number>();
  for (const u of session.usage) counts.set(u.modelId, (counts.get(u.modelId) ?? 0) + 1);
  let best: string | undefined;
  for (const [model, n] of counts) if (best === undefined || n > counts.get(best)!) best = model;
  return best;
}

type SessionInsert = Insertable<SessionsTable>;
type MessageInsert = Insertable<MessagesTable>;

interface Computers {
  workstation?: { id: string; since: number };
  sandbox?: { id: string; since: number };
}

async function demoComputers(db: Kysely<Database>, orgId: string, options: DemoOptions): Promise<Computers> {
  // The computers demo is idempotent: it adds each computer once.
  await writeComputersDemo(db, orgId, options);
  const found = async (name: string) => {
    const c = await findComputerByName(db, orgId, name);
    return c && { id: c.id, since: c.created_at.getTime() };
  };
  return { workstation: await found(DEMO_WORKSTATION), sandbox: await found(DEMO_SANDBOX) };
}

/**
 * Where a session ran: the founder's terminal sessions on the workstation, web and scripted
 * (non-interactive) ones in the sandbox; the others on their users' own machines (no computer).
 */
function computerOf(computers: Computers, founder: boolean, client: string, start: number): string | null {
  const c = client === "terminal-ui" ? (founder ? computers.workstation : undefined) : computers.sandbox;
  return c && c.since < start ? c.id : null;
}

/** What a subagent was asked and answered, and its title, from its parent's title. */
const subagentTexts = (parentTitle: string) => ({
  title: `Subagent: find the code for "${parentTitle}"`,
  question: () => `Find the code relevant to: ${parentTitle}`,
  answer: (turn: StoryTurn) => answerOf(turn, "The summary went back to the parent session."),
});

interface Texts {
  title: string;
  question(turn: number, seed: string): string;
  answer(turn: StoryTurn, seed: string): string;
}

function rowsOf(
  orgId: string,
  session: StorySession,
  texts: Texts,
  computerId: string | null,
  parentId: string | null,
): { session: SessionInsert; messages: MessageInsert[] } {
  const { title } = texts;
  const seed = session.id;
  const messages: MessageInsert[] = [];
  const message = (role: "user" | "assistant", at: number, text: string): MessageInsert => ({
    id: demoUuid("demo-message", seed, String(messages.length)),
    org_id: orgId,
    session_id: session.id,
    seq: messages.length + 1,
    role,
    content: JSON.stringify([{ text, id: demoUuid("demo-block", seed, String(messages.length)) }]),
    created_at: new Date(at),
    updated_at: new Date(at),
    computer_id: computerId,
    visibility: "both",
    ...(role === "user"
      ? { user_message_source: USER_MESSAGE_SOURCE[session.client] ?? "sessions_api", author_user_id: session.userId }
      : { is_user_visible: true, is_error: false }),
  });
  let activeMs = 0;
  for (const [i, turn] of session.turns.entries()) {
    messages.push(message("user", turn.userAt, texts.question(i, seed)));
    messages.push(message("assistant", turn.assistantAt, texts.answer(turn, `${seed}/${i}`)));
    activeMs += turn.assistantAt - turn.userAt;
  }
  const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, thinking: 0 };
  for (const u of session.usage) {
    usage.input += u.input;
    usage.output += u.output;
    usage.cacheRead += u.cacheRead;
    usage.cacheWrite += u.cacheWrite;
    // Thinking models spend part of their output on reasoning.
    if (u.modelTier === "thinking") usage.thinking += Math.round(u.output * 0.4);
  }
  const model = mainModel(session);
  const tools = [...new Set(session.turns.flatMap((t) => t.tools).filter((t) => !t.includes(".")))].sort();
  const settings: StoredSettings = {
    ...(model ? { model, specModeModel: model } : {}),
    assistantActiveTimeMs: activeMs,
    tags: [
      { name: DEMO_TAG, metadata: {} },
      ...(demoFraction(seed, "tag") < 0.4 ? [{ name: "backend", metadata: { team: "platform" } }] : []),
    ],
    enabledToolIds: tools,
    disabledToolIds: [],
  };
  const credits = Math.round((usage.input + usage.output + usage.cacheWrite + 0.1 * usage.cacheRead) * 100) / 100;
  const end = new Date(session.end);
  return {
    messages,
    session: {
      id: session.id,
      org_id: orgId,
      user_id: session.userId,
      parent_session_id: parentId,
      root_id: parentId ?? session.id,
      title,
      computer_id: computerId,
      status: "idle",
      message_count: messages.length,
      settings: JSON.stringify(settings),
      client: session.client,
      autonomy_mode: session.autonomyMode,
      created_at: new Date(session.start),
      updated_at: end,
      completed_at: end,
      claimed_seq: messages.length,
      handled_seq: messages.length,
      input_tokens: usage.input,
      output_tokens: usage.output,
      cache_read_tokens: usage.cacheRead,
      cache_creation_tokens: usage.cacheWrite,
      thinking_tokens: usage.thinking,
      factory_credits: credits,
    },
  };
}

/**
 * Inserts the rows a batch at a time, sessions first (messages reference them). Their IDs derive
 * from the story, so rows a previous run wrote are left as they are.
 */
async function insertRows(db: Kysely<Database>, sessions: SessionInsert[], messages: MessageInsert[]): Promise<void> {
  for (let i = 0; i < sessions.length; i += BATCH)
    await db
      .insertInto("sessions")
      .values(sessions.slice(i, i + BATCH))
      .onConflict((oc) => oc.column("id").doNothing())
      .execute();
  for (let i = 0; i < messages.length; i += BATCH)
    await db
      .insertInto("messages")
      .values(messages.slice(i, i + BATCH))
      .onConflict((oc) => oc.column("id").doNothing())
      .execute();
}

export async function writeSessionsDemo(db: Kysely<Database>, orgId: string, options: DemoOptions): Promise<void> {
  const computers = await demoComputers(db, orgId, options);
  const story = await demoStory(db, orgId, options, Date.now());
  const founder = story.users[0]?.id;
  const titles = new Set<string>();
  let sessions: SessionInsert[] = [];
  let messages: MessageInsert[] = [];
  await db.transaction().execute(async (trx) => {
    for (const userDay of story.telemetry()) {
      const held = sessionsOf(userDay);
      const subagents = new Set(held.map((s) => subagentIdOf(s.id)));
      // Parents first: a child's row names its parent's.
      for (const s of held.filter((s) => !subagents.has(s.id))) {
        const computerId = computerOf(computers, s.userId === founder, s.client, s.start);
        const title = titleOf(s.id, titles);
        const texts: Texts = {
          title,
          question: (i, seed) => questionOf(title, i, seed),
          answer: (turn, seed) => answerOf(turn, pickOf(CLOSINGS, seed, "closing")),
        };
        const rows = rowsOf(orgId, s, texts, computerId, null);
        sessions.push(rows.session);
        messages.push(...rows.messages);
        const child = held.find((c) => c.id === subagentIdOf(s.id));
        if (child) {
          const childRows = rowsOf(orgId, child, subagentTexts(title), computerId, s.id);
          sessions.push(childRows.session);
          messages.push(...childRows.messages);
        }
      }
      if (messages.length >= 10 * BATCH) {
        await insertRows(trx, sessions, messages);
        sessions = [];
        messages = [];
      }
    }
    const pending = story.pending;
    if (pending) {
      const title = titleOf(pending.id, titles);
      const computerId = computerOf(computers, true, pending.client, pending.start);
      const at = new Date(pending.messageAt);
      sessions.push({
        id: pending.id,
        org_id: orgId,
        user_id: pending.userId,
        parent_session_id: null,
        root_id: pending.id,
        title,
        computer_id: computerId,
        status: "pending",
        pending_since: at,
        message_count: 1,
        settings: JSON.stringify({ tags: [{ name: DEMO_TAG, metadata: {} }] } satisfies StoredSettings),
        client: pending.client,
        autonomy_mode: pending.autonomyMode,
        created_at: new Date(pending.start),
        updated_at: at,
      });
      messages.push({
        id: pending.messageId,
        org_id: orgId,
        session_id: pending.id,
        seq: 1,
        role: "user",
        content: JSON.stringify([{ text: questionOf(title, 0, pending.id), id: demoUuid("demo-block", pending.id) }]),
        created_at: at,
        updated_at: at,
        computer_id: computerId,
        visibility: "both",
        user_message_source: USER_MESSAGE_SOURCE[pending.client]!,
        author_user_id: pending.userId,
      });
    }
    await insertRows(trx, sessions, messages);
  });
}
