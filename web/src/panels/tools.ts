// The most used tools and MCP servers over the range (/tools), summed over its days.
import type { Envelope, ToolsRow } from "../api-types.js";
import { drawBars, rank } from "../bars.js";
import { ANALYTICS, type LoadContext, rangeQuery } from "../context.js";
import { Panel } from "../panel.js";

const TOP = 8;

export async function loadTools(ctx: LoadContext): Promise<void> {
  const tools = new Panel("top-tools");
  const servers = new Panel("top-mcp-servers");
  const answer = ctx.api.get<Envelope<ToolsRow>>(`${ANALYTICS}/tools`, rangeQuery(ctx), ctx.signal);
  await Promise.all([
    tools.load(
      () => answer,
      ({ data: rows }) => {
        const items = rank(
          rows.flatMap((r) => r.by_tool.map((t) => ({ label: t.tool, value: t.invocations }))),
          TOP,
        );
        if (items.length === 0) return false;
        drawBars("top-tools", tools.body, items, "calls");
        return true;
      },
      "No tool calls in this range.",
    ),
    servers.load(
      () => answer,
      ({ data: rows }) => {
        const items = rank(
          rows.flatMap((r) => r.mcp_by_server.map((s) => ({ label: s.server, value: s.invocations }))),
          TOP,
        );
        if (items.length === 0) return false;
        drawBars("top-mcp-servers", servers.body, items, "calls");
        return true;
      },
      "No MCP server calls in this range.",
    ),
  ]);
}
