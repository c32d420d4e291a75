// Builds elements from data without innerHTML: every text from the API (emails, repository
// URLs, session titles) is set as text, never parsed as markup.
type Child = Node | string | number | null | undefined | false;
type Attributes = Record<string, string | number | boolean | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? "" : String(value));
  }
  element.append(...nodes(children));
  return element;
}

function nodes(children: Child[]): (Node | string)[] {
  return children
    .filter((c) => c !== null && c !== undefined && c !== false)
    .map((c) => (typeof c === "number" ? String(c) : (c as Node | string)));
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element as T;
}

export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren(...nodes(children));
}
