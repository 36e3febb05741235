// Tools: every tool with its description, a form from its parameter schema, Run, and the
// result as render blocks plus the canonical JSON and the error code. Calls go through the
// full pipeline (policy and approvals apply); an `ask` shows its approval in the result.

import { api } from "./api.js";
import { approvalPanel } from "./approval.js";
import { FieldError, parametersForm } from "./form.js";
import { duration, el, json, renderBlocks } from "./render.js";

const HINTS = { readOnlyHint: "read-only", destructiveHint: "destructive", idempotentHint: "idempotent", openWorldHint: "open world" };

export class ToolsView {
  constructor(root, say) {
    this.root = root;
    this.say = say;
    this.cards = new Map(); // name -> {key, section, running: Map(callId -> resultRegion)}
    this.filter = el("input", { id: "tool-filter", type: "search", autocomplete: "off" });
    this.filter.addEventListener("input", () => this.applyFilter());
    this.list = el("div", { className: "tools" });
    this.count = el("p", { className: "muted", role: "status" });
    root.append(el("div", { className: "actions" }, el("label", { for: "tool-filter", text: "Filter tools" }), this.filter), this.count, this.list);
  }

  async load() {
    this.show(await api.get("/api/tools"));
  }

  show(tools) {
    const seen = new Set();
    let previous = null;
    for (const tool of tools) {
      seen.add(tool.name);
      const key = JSON.stringify([tool.description, tool.parameters, tool.output, tool.annotations, tool.owner]);
      let card = this.cards.get(tool.name);
      if (!card || card.key !== key) {
        const fresh = this.card(tool, key, card);
        if (card) card.section.replaceWith(fresh.section);
        card = fresh;
        this.cards.set(tool.name, card);
      }
      if (card.section.parentNode !== this.list || (previous ? previous.nextSibling !== card.section : this.list.firstChild !== card.section)) {
        if (previous) previous.after(card.section); else this.list.prepend(card.section);
      }
      previous = card.section;
    }
    for (const [name, card] of this.cards) {
      if (!seen.has(name)) { card.section.remove(); this.cards.delete(name); }
    }
    this.count.textContent = `${tools.length} tool(s)`;
    this.applyFilter();
  }

  applyFilter() {
    const needle = this.filter.value.trim().toLowerCase();
    for (const [name, card] of this.cards) card.section.hidden = needle !== "" && !name.toLowerCase().includes(needle) && !card.description.toLowerCase().includes(needle);
  }

  card(tool, key, old) {
    const titleId = `tool-${tool.name}`;
    const form = parametersForm(tool.parameters);
    const result = el("section", { className: "result", "aria-label": "result", "aria-live": "polite" });
    const run = el("button", { type: "button", className: "primary", text: "Run" });
    const hints = Object.entries(tool.annotations || {}).filter(([, on]) => on).map(([hint]) => HINTS[hint] || hint);
    const section = el("section", { className: "tool", "aria-labelledby": titleId, "data-tool": tool.name },
      el("h3", { id: titleId, text: tool.name }),
      el("p", { className: "description", text: tool.description }),
      el("p", { className: "muted", text: [tool.owner, ...hints].filter(Boolean).join(" · ") }),
      el("form", { onsubmit: (event) => { event.preventDefault(); this.run(tool.name, form, result, run); } },
        form.element, el("div", { className: "actions" }, run)),
      result);
    run.type = "submit";
    const card = { key, section, result, description: tool.description, calls: new Set(), name: tool.name };
    if (old) for (const callId of old.calls) card.calls.add(callId);
    return card;
  }

  async run(name, form, result, button) {
    let args;
    try {
      args = form.read();
    } catch (error) {
      if (!(error instanceof FieldError)) throw error;
      result.replaceChildren(el("p", { className: "error", text: error.message }));
      return;
    }
    const id = `web-${crypto.randomUUID()}`;
    const card = this.cards.get(name);
    if (card) card.calls.add(id);
    button.disabled = true;
    result.replaceChildren(el("p", { className: "status status-running", text: "running…" }));
    try {
      const outcome = await api.post(`/api/tools/${encodeURIComponent(name)}/call`, { args, id });
      this.showResult(result, outcome);
    } catch (error) {
      result.replaceChildren(el("p", { className: "error", text: error.message }));
    } finally {
      button.disabled = false;
      if (card) card.calls.delete(id);
    }
  }

  showResult(region, outcome) {
    const code = outcome.code ?? null;
    region.replaceChildren(...[
      el("p", {}, el("span", { className: `status status-${code ? "error" : "done"}`, text: code ? `error code: ${code}` : "done" }),
        el("span", { className: "muted", text: ` · ${duration(outcome.duration_ms)}` })),
      outcome.error ? el("p", { className: "error", text: outcome.error }) : null,
      el("h4", { text: "Rendered" }), renderBlocks(outcome.content),
      el("h4", { text: "Canonical JSON" }), json(outcome.result)].filter(Boolean));
  }

  // An approval request for one of this page's calls: shown in that tool's result region.
  approval(request) {
    // a call a run_code program made has the id "<the program's call>/<n>"
    const owner = String(request.call_id ?? "").split("/")[0];
    for (const card of this.cards.values()) {
      if (card.calls.has(request.call_id) || card.calls.has(owner)) {
        card.result.replaceChildren(el("p", { className: "status status-waiting-for-approval", text: "waiting for approval" }),
          approvalPanel(request, this.say));
        return true;
      }
    }
    return false;
  }

  decided(event) {
    for (const card of this.cards.values()) {
      const panel = card.result.querySelector(`[data-approval="${CSS.escape(event.id)}"]`);
      if (panel) {
        card.result.replaceChildren(el("p", { className: "status status-running", text: event.decision === "deny" ? "denied…" : "approved, running…" }));
        return true;
      }
    }
    return false;
  }
}
