// Demo sessions: for each user of the organization who may write (owner, manager, member), a few
// finished coding sessions spread over the demo period, each with a realistic conversation
// (user asks, the agent calls tools and answers), token usage, settings, and now and then a
// subagent child session whose usage rolls up into its parent. The newest session of the first
// user is left pending, waiting for a runner. Skipped when the organization already has demo
// sessions (tagged "demo"), so running it twice writes them once. Deterministic per organization.
//
// It writes rows directly (no telemetry events: the analytics demo writes its own history).
import { sql, type Kysely, type Transaction } from "kysely";
import type { Database, Executor } from "../database.js";
import type { DemoOptions } from "../platform/module.js";
import { insertMessages, type NewMessageRow } from "./message-queries.js";
import { insertSession } from "./session-queries.js";
import { newId } from "../platform/ids.js";
import type { StoredSettings } from "./tables.js";

interface Task {
  title: string;
  turns: { user: string; tool?: string; assistant: string }[];
}

const TASKS: Task[] = [
  {
    title: "Fix flaky checkout test",
    turns: [
      {
        user: "The checkout e2e test fails about one run in five on CI. Can you find out why?",
        tool: "$ npx vitest run test/checkout.test.ts --repeat 20\n 4 failed | 16 passed",
        assistant:
          "The test reads the order total before the pricing request resolves. I replaced the fixed 200 ms sleep with `await screen.findByText(/Total/)`; 50 consecutive runs pass now.",
      },
      {
        user: "Nice. Could you also check the cart test, it has the same sleep?",
        assistant:
          "Yes, `cart.test.ts` line 88 had the same pattern. Fixed it the same way and removed the now unused `sleep` helper.",
      },
    ],
  },
  {
    title: "Add pagination to the invoices API",
    turns: [
      {
        user: "GET /invoices returns everything at once. Add cursor pagination with a limit of 1 to 100, default 20.",
        tool: '$ rg -n "listInvoices" src\nsrc/invoices/routes.ts:14\nsrc/invoices/repo.ts:31',
        assistant:
          "Added keyset pagination on (created_at, id) with an opaque cursor, validated `limit` (400 outside 1–100) and updated the OpenAPI document. Tests cover the first page, the last page and a bad cursor.",
      },
      {
        user: "Please make the cursor expire after an hour.",
        assistant:
          "Cursors now carry an issue time and are rejected with a 400 after 60 minutes; the error message tells the client to start again without a cursor.",
      },
      {
        user: "Ship it.",
        tool: '$ git commit -am "invoices: cursor pagination"\n[feat/invoices-paging 3f2a9c1] invoices: cursor pagination',
        assistant: "Committed on `feat/invoices-paging` and opened a pull request with the summary and the test plan.",
      },
    ],
  },
  {
    title: "Upgrade to Node 22",
    turns: [
      {
        user: "Upgrade the service to Node 22 and fix whatever breaks.",
        tool: "$ npm test\n  3 failing: fetch() keep-alive, crypto.createCipher removed, url.parse deprecation",
        assistant:
          "Bumped the engines field, the Dockerfile and CI to Node 22. Replaced `crypto.createCipher` with `createCipheriv`, swapped `url.parse` for `new URL`, and fixed the keep-alive test to close its agent. All 412 tests pass.",
      },
    ],
  },
  {
    title: "Explain the billing rollup job",
    turns: [
      {
        user: "How does the nightly billing rollup work? I need to change when it runs.",
        assistant:
          "It is scheduled in `jobs/rollup.ts` at 00:15 UTC, reads the previous day's usage events, aggregates them per organization and model, and upserts `daily_usage`. The schedule comes from `ROLLUP_CRON`; changing that variable is enough, nothing else assumes the time.",
      },
      {
        user: "Does it catch up if it misses a day?",
        assistant:
          "Yes: on start it looks for the newest rolled-up day and runs every missing day up to yesterday, oldest first.",
      },
    ],
  },
  {
    title: "Speed up the search endpoint",
    turns: [
      {
        user: "/search takes 2 s on large workspaces. Profile it and propose a fix.",
        tool: "EXPLAIN ANALYZE ... Seq Scan on documents (rows=1840212) Filter: (workspace_id = $1)",
        assistant:
          "The query scans all documents because the index is on (title) only. A composite index on (workspace_id, updated_at desc) brings it to 35 ms. I added the migration and a benchmark to the perf suite.",
      },
    ],
  },
  {
    title: "Write release notes for 3.4",
    turns: [
      {
        user: "Draft release notes for 3.4 from the merged PRs since 3.3.",
        tool: '$ gh pr list --state merged --search "merged:>=2026-01-02" --limit 100\n47 pull requests',
        assistant:
          "Drafted `RELEASE-NOTES.md` with highlights (SSO groups, faster search, CSV export), 12 fixes and 2 deprecations; internal refactors are left out.",
      },
    ],
  },
];

const MODELS = ["claude-sonnet-4-5", "gpt-5", "claude-opus-4-1", "gemini-2.5-pro"];
const TOOLS = ["Read", "Edit", "Execute", "Grep", "WebSearch"];
const CLIENTS = ["terminal-ui", "web", "non-interactive-cli"];
const MODES = ["auto-medium", "auto-high", "auto-low", "spec", "manual"];
const DEMO_TAG = "demo";

/** A small deterministic generator (mulberry32) seeded from the organization ID. */
function random(seedText: string): () => number {
  let seed = 0;
  for (const ch of seedText) seed = (Math.imul(seed, 31) + ch.charCodeAt(0)) | 0;
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function hasDemoSessions(db: Executor, orgId: string): Promise<boolean> {
  const row = await db
    .selectFrom("sessions")
    .select("id")
    .where("org_id", "=", orgId)
    .where(sql<boolean>`settings->'tags' @> ${JSON.stringify([{ name: DEMO_TAG }])}::jsonb`)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export async function writeSessionsDemo(db: Kysely<Database>, orgId: string, options: DemoOptions): Promise<void> {
  if (await hasDemoSessions(db, orgId)) return;
  const users = await db
    .selectFrom("users")
    .select("id")
    .where("org_id", "=", orgId)
    .where("role", "in", ["owner", "manager", "member"])
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  const rand = random(orgId);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const days = Math.max(1, options.days);
  const yesterdayEnd = new Date(new Date().setUTCHours(0, 0, 0, 0) - 60_000).getTime();
  const perUser = Math.min(8, Math.max(2, Math.round(days / 4)));

  for (const [u, user] of users.entries()) {
    for (let n = 0; n < perUser; n++) {
      const task = TASKS[(u + n * 3) % TASKS.length]!;
      const dayOffset = Math.floor(rand() * days);
      const start = yesterdayEnd - dayOffset * 86_400_000 - Math.floor(rand() * 8) * 3_600_000 - 3_600_000;
      const waiting = u === 0 && n === perUser - 1;
      await db
        .transaction()
        .execute((trx) => writeSession(trx, { orgId, userId: user.id, task, start, waiting, rand, pick }));
    }
  }
}

interface SessionPlan {
  orgId: string;
  userId: string;
  task: Task;
  start: number;
  /** Leave the last user message unanswered (status pending). */
  waiting: boolean;
  rand: () => number;
  pick: <T>(items: readonly T[]) => T;
}

async function writeSession(trx: Transaction<Database>, plan: SessionPlan): Promise<void> {
  const { rand, pick } = plan;
  const model = pick(MODELS);
  const settings: StoredSettings = {
    model,
    specModeModel: pick(MODELS),
    assistantActiveTimeMs: Math.round(20_000 + rand() * 600_000),
    tags: [
      { name: DEMO_TAG, metadata: {} },
      ...(rand() < 0.5 ? [{ name: "backend", metadata: { team: "platform" } }] : []),
    ],
    enabledToolIds: TOOLS.filter(() => rand() < 0.8),
    disabledToolIds: [],
  };
  let t = plan.start;
  const messages: { row: NewMessageRow; at: Date }[] = [];
  const usage = { input: 0, output: 0, cacheRead: 0, cacheCreation: 0, thinking: 0 };
  const turns = plan.waiting ? plan.task.turns.slice(0, 1) : plan.task.turns;
  for (const [i, turn] of turns.entries()) {
    t += 30_000 + Math.floor(rand() * 300_000);
    messages.push({
      at: new Date(t),
      row: {
        id: newId(),
        role: "user",
        content: [{ text: turn.user, id: newId() }],
        user_message_source: pick(["cli_tui", "web", "sessions_api"]),
        visibility: "both",
        author_user_id: plan.userId,
      },
    });
    if (plan.waiting && i === turns.length - 1) break;
    if (turn.tool) {
      t += 5_000 + Math.floor(rand() * 60_000);
      messages.push({
        at: new Date(t),
        row: {
          id: newId(),
          role: "tool",
          content: [{ text: turn.tool, id: newId() }],
          visibility: "llm_only",
          is_user_visible: false,
          is_error: false,
        },
      });
    }
    t += 10_000 + Math.floor(rand() * 120_000);
    messages.push({
      at: new Date(t),
      row: {
        id: newId(),
        role: "assistant",
        content: [{ text: turn.assistant, id: newId() }],
        visibility: "both",
        is_user_visible: true,
        is_error: false,
      },
    });
    usage.input += 1_500 + Math.floor(rand() * 18_000);
    usage.output += 150 + Math.floor(rand() * 1_500);
    usage.cacheRead += Math.floor(rand() * 40_000);
    usage.cacheCreation += Math.floor(rand() * 4_000);
    usage.thinking += model.includes("opus") || model.includes("gpt") ? Math.floor(rand() * 2_000) : 0;
  }
  const credits = Math.round((usage.input + usage.output + usage.cacheCreation + 0.1 * usage.cacheRead) * 100) / 100;
  const last = new Date(t);
  const session = await insertSession(
    trx,
    {
      orgId: plan.orgId,
      userId: plan.userId,
      parentSessionId: null,
      title: plan.task.title,
      computerId: null,
      settings,
      client: pick(CLIENTS),
      autonomyMode: pick(MODES),
      createdAt: new Date(plan.start),
    },
    {
      status: plan.waiting ? "pending" : "idle",
      pending_since: plan.waiting ? last : null,
      updated_at: last,
      completed_at: plan.waiting ? null : last,
      message_count: messages.length,
      claimed_seq: plan.waiting ? 0 : messages.length,
      handled_seq: plan.waiting ? 0 : messages.length,
      input_tokens: usage.input,
      output_tokens: usage.output,
      cache_read_tokens: usage.cacheRead,
      cache_creation_tokens: usage.cacheCreation,
      thinking_tokens: usage.thinking,
      factory_credits: credits,
    },
  );
  for (const [i, m] of messages.entries()) {
    await insertMessages(trx, { orgId: plan.orgId, sessionId: session.id, lastSeq: i }, m.at, [m.row]);
  }
  // Now and then a subagent explored part of the task: a child session with its own usage.
  if (!plan.waiting && rand() < 0.35) {
    const childStart = plan.start + 60_000;
    const child = await insertSession(
      trx,
      {
        orgId: plan.orgId,
        userId: plan.userId,
        parentSessionId: session.id,
        title: `Subagent: explore code for "${plan.task.title}"`,
        computerId: null,
        settings: { model: "claude-haiku-4-5", tags: [{ name: DEMO_TAG, metadata: {} }] },
        client: session.client,
        autonomyMode: "auto-high",
        createdAt: new Date(childStart),
      },
      {
        updated_at: new Date(childStart + 90_000),
        completed_at: new Date(childStart + 90_000),
        message_count: 2,
        claimed_seq: 2,
        handled_seq: 2,
        input_tokens: 4_200,
        output_tokens: 610,
        cache_read_tokens: 12_000,
        factory_credits: 6_010,
      },
    );
    await insertMessages(trx, { orgId: plan.orgId, sessionId: child.id, lastSeq: 0 }, new Date(childStart + 1_000), [
      {
        role: "user",
        content: [{ text: `Find the code relevant to: ${plan.task.turns[0]!.user}`, id: newId() }],
        visibility: "llm_only",
        author_user_id: plan.userId,
      },
    ]);
    await insertMessages(trx, { orgId: plan.orgId, sessionId: child.id, lastSeq: 1 }, new Date(childStart + 90_000), [
      {
        role: "assistant",
        content: [
          { text: "The relevant code is in src/ (3 files); summary returned to the parent session.", id: newId() },
        ],
        visibility: "both",
      },
    ]);
  }
}
