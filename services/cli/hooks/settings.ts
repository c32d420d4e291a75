// `hook install` / `hook uninstall` on an agent settings file (docs/interface.md §6):
//   {"hooks": {"<Event>": [{"hooks": [{"type": "command", "command": "...", "timeout": 5}]}]}}
// Our hook is recognised by its command (it runs `agentplane … hook notify`), so uninstall
// touches nothing else. Edits go through json-edit.ts and keep the file's formatting.
import {
  appendChild,
  parseTree,
  propOf,
  removeChild,
  replaceNode,
  JsonSyntaxError,
  type ArrayNode,
  type JsonNode,
  type ObjectNode,
} from "./json-edit.js";

export class SettingsError extends Error {}

export interface CommandHook {
  type: "command";
  command: string;
  timeout: number;
}

/** True for a command that runs `agentplane hook notify` (bare, a path to it, or bin/agentplane.js). */
export function isNotifyCommand(command: string): boolean {
  return /(?:^|[\s"'/\\])agentplane(?:\.js)?["']?\s+hook\s+notify(?:\s|$)/.test(command);
}

function asObject(node: JsonNode | undefined): ObjectNode | undefined {
  return node?.kind === "object" ? node : undefined;
}

function asArray(node: JsonNode | undefined): ArrayNode | undefined {
  return node?.kind === "array" ? node : undefined;
}

function root(text: string): ObjectNode {
  let tree: JsonNode;
  try {
    tree = parseTree(text);
  } catch (err) {
    if (err instanceof JsonSyntaxError) throw new SettingsError(`not valid JSON: ${err.message}`);
    throw err;
  }
  if (tree.kind !== "object") throw new SettingsError("must hold a JSON object");
  return tree;
}

function hooksObject(tree: ObjectNode): ObjectNode | undefined {
  const prop = propOf(tree, "hooks");
  if (!prop) return undefined;
  if (prop.value.kind !== "object") throw new SettingsError("hooks: must be an object keyed by event name");
  return prop.value;
}

function eventArray(hooks: ObjectNode, event: string): ArrayNode | undefined {
  const prop = propOf(hooks, event);
  if (!prop) return undefined;
  if (prop.value.kind !== "array") throw new SettingsError(`hooks.${event}: must be an array`);
  return prop.value;
}

/** Where one of our hooks sits: the path of indexes from the root down to it. */
interface Found {
  event: string;
  entryIndex: number;
  hookIndex: number;
  hook: ObjectNode;
}

function findOurs(hooks: ObjectNode, events?: readonly string[]): Found | undefined {
  for (const { key: event, value } of hooks.props) {
    if (events && !events.includes(event)) continue;
    const entries = asArray(value);
    if (!entries) continue;
    for (const [entryIndex, entry] of entries.items.entries()) {
      const list = asArray(asObject(entry) && propOf(entry as ObjectNode, "hooks")?.value);
      if (!list) continue;
      for (const [hookIndex, item] of list.items.entries()) {
        const hook = asObject(item);
        const command = hook && propOf(hook, "command")?.value;
        if (hook && command?.kind === "value" && typeof command.value === "string" && isNotifyCommand(command.value)) {
          return { event, entryIndex, hookIndex, hook };
        }
      }
    }
  }
  return undefined;
}

function hookValue(hook: ObjectNode): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of hook.props) if (p.value.kind === "value") out[p.key] = p.value.value;
  return out;
}

export interface InstallResult {
  text: string;
  added: string[];
  updated: string[];
  unchanged: string[];
}

/** Adds (or updates) our hook for each event; `text` undefined means the file does not exist yet. */
export function installHooks(text: string | undefined, events: readonly string[], hook: CommandHook): InstallResult {
  let current = text ?? "{}\n";
  const result: InstallResult = { text: current, added: [], updated: [], unchanged: [] };
  const entry = { hooks: [hook] };
  const tree = root(current);
  if (!hooksObject(tree)) {
    // One insertion for the whole object, so uninstall's removals fold back to the original bytes.
    current = appendChild(current, tree, Object.fromEntries(events.map((e) => [e, [entry]])), "hooks");
    return { ...result, text: current, added: [...events] };
  }
  for (const event of events) {
    const hooks = hooksObject(root(current)) as ObjectNode;
    const entries = eventArray(hooks, event);
    if (!entries) {
      current = appendChild(current, hooks, [entry], event);
      result.added.push(event);
      continue;
    }
    const found = findOurs(hooks, [event]);
    if (!found) {
      current = appendChild(current, entries, entry);
      result.added.push(event);
      continue;
    }
    const existing = hookValue(found.hook);
    if (existing.type === hook.type && existing.command === hook.command && existing.timeout === hook.timeout) {
      result.unchanged.push(event);
    } else {
      // Keep whatever else the entry holds; refresh the command and timeout.
      current = replaceNode(current, found.hook, { ...existing, ...hook });
      result.updated.push(event);
    }
  }
  return { ...result, text: current };
}

export interface UninstallResult {
  text: string;
  removed: string[];
}

/**
 * Removes every hook of ours (for `events`, or all events). A container our removal leaves empty
 * (the entry, the event's array, the hooks object) goes with it: that is what install added.
 */
export function uninstallHooks(text: string, events?: readonly string[]): UninstallResult {
  let current = text;
  const removed = new Set<string>();
  for (;;) {
    const tree = root(current);
    const hooksProp = propOf(tree, "hooks");
    const hooks = hooksObject(tree);
    if (!hooks || !hooksProp) break;
    const found = findOurs(hooks, events);
    if (!found) break;
    removed.add(found.event);
    const entries = eventArray(hooks, found.event) as ArrayNode;
    const entry = entries.items[found.entryIndex] as ObjectNode;
    const list = propOf(entry, "hooks")?.value as ArrayNode;
    if (list.items.length > 1) {
      current = removeChild(current, list, found.hookIndex);
    } else if (entries.items.length > 1) {
      current = removeChild(current, entries, found.entryIndex);
    } else if (hooks.props.length > 1) {
      current = removeChild(
        current,
        hooks,
        hooks.props.findIndex((p) => p.key === found.event),
      );
    } else {
      current = removeChild(current, tree, tree.props.indexOf(hooksProp));
    }
  }
  return { text: current, removed: [...removed] };
}
