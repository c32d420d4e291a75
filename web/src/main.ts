// The dashboard page: asks for the API key once, then loads every panel. The analytics panels
// follow the chosen date range; readiness and sessions are the organization's as they are now.
import "./style.css";
import { ApiClient } from "./api.js";
import type { LoadContext } from "./context.js";
import {
  type DayRange,
  EARLIEST_DAY,
  eachDay,
  includesProvisionalDay,
  lastDays,
  latestDay,
  rangeProblem,
} from "./dates.js";
import "./debug.js";
import { byId, replaceChildren } from "./dom.js";
import { forgetKey, storedKey, storeKey } from "./key-store.js";
import { KeyRefused } from "./panel.js";
import { loadActivity } from "./panels/activity.js";
import { loadCredits } from "./panels/credits.js";
import { loadProductivity } from "./panels/productivity.js";
import { loadReadiness } from "./panels/readiness.js";
import { loadSessions } from "./panels/sessions.js";
import { loadTools } from "./panels/tools.js";
import { loadUsers } from "./panels/users.js";

const gate = byId("key-gate");
const dashboard = byId("dashboard");
const keyForm = byId<HTMLFormElement>("key-form");
const keyInput = byId<HTMLInputElement>("api-key");
const keyError = byId("key-error");
const preset = byId<HTMLSelectElement>("range-preset");
const startInput = byId<HTMLInputElement>("range-start");
const endInput = byId<HTMLInputElement>("range-end");
const rangeError = byId("range-error");
const accessNote = byId("access-note");

let api: ApiClient | undefined;
/** Cancels the analytics loads of the range shown (a new range or sign-out aborts them). */
let rangeLoads: AbortController | undefined;
/** Cancels the organization panels' loads and live streams (sign-out aborts them). */
let orgLoads: AbortController | undefined;

function showMessage(element: HTMLElement, text: string | undefined): void {
  replaceChildren(element, text ?? "");
  element.hidden = text === undefined;
}

function signOut(message?: string): void {
  rangeLoads?.abort();
  orgLoads?.abort();
  api = undefined;
  forgetKey();
  dashboard.hidden = true;
  byId("key-status").hidden = true;
  gate.hidden = false;
  showMessage(keyError, message);
  keyInput.value = "";
  keyInput.focus();
}

/** A load that failed because the key was refused sends the user back to the key form. */
function onFailure(err: unknown): void {
  if (err instanceof KeyRefused) signOut(`The API refused this key (401): ${err.detail}`);
  else if (!(err instanceof DOMException && err.name === "AbortError")) console.warn("dashboard load failed", err);
}

function signIn(key: string): void {
  api = new ApiClient(key);
  gate.hidden = true;
  dashboard.hidden = false;
  showMessage(keyError, undefined);
  replaceChildren(byId("key-label"), `Key ${key.slice(0, 4)}…${key.slice(-4)}`);
  byId("key-status").hidden = false;
  orgLoads = new AbortController();
  for (const load of [loadReadiness, loadSessions]) load(api, orgLoads.signal).catch(onFailure);
  applyRange();
}

function setRangeInputs(range: DayRange): void {
  startInput.value = range.start;
  endInput.value = range.end;
}

function describeLag(range: DayRange): void {
  const note = byId("lag-note");
  const provisional = includesProvisionalDay(range);
  note.dataset.provisional = String(provisional);
  replaceChildren(
    note,
    `Daily UTC figures, available through ${latestDay()}: today's data appears tomorrow (24-hour lag).`,
    provisional
      ? ` ${latestDay()} is the newest day and may still change as late events arrive (shaded in the charts).`
      : "",
  );
}

function applyRange(): void {
  const range = { start: startInput.value, end: endInput.value };
  const problem = rangeProblem(range);
  startInput.setAttribute("aria-invalid", String(problem?.field === "start"));
  endInput.setAttribute("aria-invalid", String(problem?.field === "end"));
  showMessage(rangeError, problem?.text);
  if (problem || !api) return;
  describeLag(range);
  showMessage(accessNote, undefined);
  rangeLoads?.abort();
  rangeLoads = new AbortController();
  const ctx: LoadContext = {
    api,
    range,
    days: eachDay(range.start, range.end),
    provisionalFrom: includesProvisionalDay(range) ? latestDay() : undefined,
    signal: rangeLoads.signal,
  };
  for (const load of [loadCredits, loadActivity, loadTools, loadProductivity, loadUsers]) load(ctx).catch(onFailure);
}

for (const input of [startInput, endInput]) {
  input.min = EARLIEST_DAY;
  input.max = latestDay();
  input.addEventListener("input", () => {
    preset.value = "custom";
  });
}
setRangeInputs(lastDays(Number(preset.value)));

preset.addEventListener("change", () => {
  if (preset.value === "custom") return;
  setRangeInputs(lastDays(Number(preset.value)));
  applyRange();
});

byId<HTMLFormElement>("range-form").addEventListener("submit", (event) => {
  event.preventDefault();
  applyRange();
});

keyForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const key = keyInput.value.trim();
  if (key === "") return;
  storeKey(key);
  keyInput.value = "";
  signIn(key);
});

byId("forget-key").addEventListener("click", () => signOut());

// A panel the key's role may not read (403): say so once, in the API's words.
dashboard.addEventListener("forbidden", (event) => {
  const detail = (event as CustomEvent<string>).detail;
  showMessage(
    accessNote,
    `This key cannot read analytics (403: ${detail}). Analytics are open to owners and managers; readiness and the sessions this key may see are shown below.`,
  );
});

const saved = storedKey();
if (saved) signIn(saved);
else keyInput.focus();
