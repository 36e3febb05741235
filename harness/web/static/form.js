// A form from a tool's parameter schema (the JSON Schema harness emits, pydantic's $defs
// included). Every node kind gets a field: enums as selects, booleans as checkboxes,
// numbers and strings as inputs (a string with a `contentMediaType`, such as run_code's
// program, as a multi-line text area), arrays as editable lists, objects as fieldsets,
// oneOf / anyOf as a variant select, `json` ({}) as a text area. The values are sent as typed;
// the server validates them, so its messages (with their argument paths) are the ones shown.

import { el } from "./render.js";

export class FieldError extends Error {}

let counter = 0;
const nextId = (prefix) => `${prefix}-${++counter}`;

function resolve(node, root) {
  let seen = 0;
  while (node && typeof node.$ref === "string" && seen++ < 32) {
    const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(node.$ref);
    const target = match && root[match[1]] ? root[match[1]][match[2]] : null;
    if (!target) return {};
    const { $ref, ...rest } = node;
    node = { ...target, ...rest };
  }
  return node ?? {};
}

function kindOf(node) {
  if ("const" in node) return "const";
  if (Array.isArray(node.enum)) return "enum";
  if (Array.isArray(node.oneOf)) return "oneOf";
  if (Array.isArray(node.anyOf)) return "anyOf";
  const type = Array.isArray(node.type) ? null : node.type;
  if (["string", "number", "integer", "boolean", "null", "array", "object"].includes(type)) return type;
  return "json";
}

function label(node) {
  const kind = kindOf(node);
  if (kind === "const") return node.title ?? JSON.stringify(node.const);
  if (kind === "enum") return "one of " + node.enum.map((v) => JSON.stringify(v)).join(", ");
  return node.title || kind;
}

function hint(node, id) {
  const parts = [];
  if (node.description) parts.push(node.description);
  if ("default" in node) parts.push(`default ${JSON.stringify(node.default)}`);
  if (Array.isArray(node.examples) && node.examples.length) parts.push(`e.g. ${node.examples.map((v) => JSON.stringify(v)).join(", ")}`);
  return parts.length ? el("span", { className: "hint", id, text: parts.join(" · ") }) : null;
}

function parseNumber(text, integer) {
  const trimmed = text.trim();
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(trimmed)) return Number(trimmed);
  return trimmed; // sent as typed: the server says what is wrong with it
}

// Build the field of `node` named `name` (its label), at argument path `path`; `prefill`
// starts it at the node's default (a question's form: what the person sees is what is sent).
// Returns {element, read}; read() gives {present, value} or throws FieldError.
export function field(node, name, path, required, root, prefill = false) {
  node = resolve(node, root);
  const kind = kindOf(node);
  const id = nextId("f");
  const hintId = node.description || "default" in node || node.examples ? `${id}-hint` : null;
  const wrap = (control, read) => {
    const box = el("div", { className: "field" },
      el("label", { for: id, text: name }), required ? el("span", { className: "muted", text: " (required)" }) : null,
      " ", control, hint(node, hintId));
    return { element: box, read };
  };
  const described = hintId ? { "aria-describedby": hintId } : {};

  if (kind === "const") {
    const control = el("output", { id, text: JSON.stringify(node.const) });
    return wrap(control, () => ({ present: required, value: node.const }));
  }
  if (kind === "enum") {
    const select = el("select", { id, ...described });
    if (!required) select.append(el("option", { value: "", text: "(not set)" }));
    node.enum.forEach((value, index) => select.append(el("option", { value: String(index), text: typeof value === "string" ? value : JSON.stringify(value) })));
    const start = prefill && "default" in node ? node.enum.findIndex((value) => JSON.stringify(value) === JSON.stringify(node.default)) : -1;
    if (start >= 0) select.value = String(start);
    return wrap(select, () => select.value === "" ? { present: false } : { present: true, value: node.enum[Number(select.value)] });
  }
  if (kind === "boolean") {
    const box = el("input", { id, type: "checkbox", ...described });
    if (prefill && node.default === true) box.checked = true;
    let touched = prefill && "default" in node;
    box.addEventListener("change", () => { touched = true; });
    return wrap(box, () => (required || touched || box.checked) ? { present: true, value: box.checked } : { present: false });
  }
  if (kind === "null") {
    const control = el("output", { id, text: "null" });
    return wrap(control, () => ({ present: required, value: null }));
  }
  if (kind === "string" && typeof node.contentMediaType === "string") {
    // JSON Schema's note of what the string holds (text/x-python, text/markdown...): a
    // program or a long text, edited in a multi-line text area and sent exactly as typed
    const area = el("textarea", { id, rows: 8, spellcheck: "false", className: "long-text",
      "data-media-type": node.contentMediaType, ...described });
    return wrap(area, () => (area.value === "" && !required) ? { present: false } : { present: true, value: area.value });
  }
  if (kind === "string" || kind === "number" || kind === "integer") {
    const input = el("input", { id, type: "text", inputmode: kind === "string" ? undefined : (kind === "integer" ? "numeric" : "decimal"), ...described, autocomplete: "off" });
    if (node.format === "password") input.type = "password";
    if (prefill && "default" in node && node.default !== null && typeof node.default !== "object") input.value = String(node.default);
    return wrap(input, () => {
      if (input.value === "" && (kind !== "string" || !required)) return { present: false };
      return { present: true, value: kind === "string" ? input.value : parseNumber(input.value, kind === "integer") };
    });
  }
  if (kind === "oneOf" || kind === "anyOf") {
    const variants = node[kind].map((variant) => resolve(variant, root));
    const select = el("select", { id, ...described });
    if (!required) select.append(el("option", { value: "", text: "(not set)" }));
    variants.forEach((variant, index) => select.append(el("option", { value: String(index), text: label(variant) })));
    const holder = el("div", { className: "variant" });
    let current = null;
    const pick = () => {
      holder.replaceChildren();
      current = null;
      if (select.value === "") return;
      current = field(variants[Number(select.value)], `${name} value`, path, true, root);
      holder.append(current.element);
    };
    select.addEventListener("change", pick);
    pick();
    const made = wrap(select, () => current ? current.read() : { present: false });
    made.element.append(holder);
    return made;
  }
  if (kind === "array") {
    const items = node.items && typeof node.items === "object" ? node.items : {};
    const list = el("ol", { className: "items" });
    const rows = [];
    const add = el("button", { type: "button", text: `Add to ${name}` });
    const renumber = () => rows.forEach((row, index) => { row.index = index; });
    add.addEventListener("click", () => {
      const index = rows.length;
      const child = field(items, `${name}[${index}]`, `${path}[${index}]`, true, root);
      const row = { child, index };
      const remove = el("button", { type: "button", text: `Remove ${name}[${index}]` });
      const item = el("li", {}, child.element, remove);
      remove.addEventListener("click", () => { rows.splice(rows.indexOf(row), 1); item.remove(); renumber(); add.focus(); });
      rows.push(row);
      list.append(item);
      const focusable = item.querySelector("input, select, textarea");
      if (focusable) focusable.focus();
    });
    const set = el("fieldset", { id, ...described }, el("legend", { text: name }), hint(node, hintId), list, add);
    let touched = false;
    add.addEventListener("click", () => { touched = true; });
    return { element: set, read: () => {
      const values = [];
      for (const row of rows) {
        const got = row.child.read();
        if (got.present) values.push(got.value);
      }
      return (values.length || touched || required) ? { present: true, value: values } : { present: false };
    } };
  }
  if (kind === "object" && node.properties && Object.keys(node.properties).length) {
    const needed = new Set(node.required || []);
    const children = Object.entries(node.properties).map(([key, child]) =>
      [key, field(child, `${name}.${key}`, `${path}.${key}`, needed.has(key), root)]);
    const set = el("fieldset", { id, ...described }, el("legend", { text: name }), hint(node, hintId),
      ...children.map(([, child]) => child.element));
    return { element: set, read: () => {
      const value = {};
      let any = false;
      for (const [key, child] of children) {
        const got = child.read();
        if (got.present) { value[key] = got.value; any = true; }
      }
      return (any || required) ? { present: true, value } : { present: false };
    } };
  }
  // json, or an object with no declared properties: JSON in a text area
  const area = el("textarea", { id, spellcheck: "false", ...described, placeholder: kind === "object" ? "{ }" : "any JSON" });
  return wrap(area, () => {
    if (area.value.trim() === "") return { present: false };
    try {
      return { present: true, value: JSON.parse(area.value) };
    } catch (error) {
      throw new FieldError(`${path}: not valid JSON (${error.message})`);
    }
  });
}

// The whole form of a parameters schema: one field per parameter, labelled with its name
// (`prefill`: each starts at its default; `empty`: what a form without fields says).
export function parametersForm(schema, { prefill = false, empty = "This tool takes no arguments." } = {}) {
  const root = schema || {};
  const needed = new Set(root.required || []);
  const fields = Object.entries(root.properties || {}).map(([key, node]) => [key, field(node, key, key, needed.has(key), root, prefill)]);
  const element = el("div", { className: "params" }, ...fields.map(([, f]) => f.element));
  if (!fields.length && empty) element.append(el("p", { className: "muted", text: empty }));
  const read = () => {
    const args = {};
    for (const [key, f] of fields) {
      const got = f.read();
      if (got.present) args[key] = got.value;
    }
    return args;
  };
  return { element, read };
}
