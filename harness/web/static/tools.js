// Tools: every tool with its description (its first paragraph; the rest, such as run_code's
// stubs, folded), a form from its parameter schema, Run, and the result as render blocks plus
// the canonical JSON and the error code. Calls go through the full pipeline (policy and
// approvals apply); an `ask` shows its approval in the result. A running call has Cancel
// (POST /api/calls/{id}/cancel: it ends `cancelled`), and a program's calls appear as live
// nested cards while it runs (the code/call and code/result events). Search finds tools by
// what they do (GET /api/tools/search, the search of ctx.tools.search: best first, with
// scores, never a tool the policy denies); a found name leads to its card (#/tools?tool=).

import { api, ApiError } from "./api.js";
import { callActivity } from "./activity.js";
import { approvalPanel, decisionNote } from "./approval.js";
import { FieldError, parametersForm } from "./form.js";
import { duration, el, foundTools, inline, json, liveCard, prose, renderBlocks, statusClass, statusOf } from "./render.js";

const HINTS = { readOnlyHint: "read-only", destructiveHint: "destructive", idempotentHint: "idempotent", openWorldHint: "open world" };

export class ToolsView {
  constructor(root, say) {
    this.root = root;
    this.say = say;
    this.cards = new Map(); // name -> {key, section, result, description, name}
    this.runs = new Map(); // call id -> the run of this page (see run())
    this.filter = el("input", { id: "tool-filter", type: "search", autocomplete: "off" });
    this.filter.addEventListener("input", () => this.applyFilter());
    this.list = el("div", { className: "tools" });
    this.count = el("p", { className: "muted", role: "status" });
    this.query = el("input", { id: "tool-search", type: "search", autocomplete: "off", maxlength: 500 });
    this.found = el("section", { className: "found-tools", "aria-label": "search results", "aria-live": "polite" });
    const search = el("form", { role: "search", className: "actions", onsubmit: (event) => { event.preventDefault(); this.search(); } },
      el("label", { for: "tool-search", text: "Search tools" }), this.query,
      el("button", { type: "submit", text: "Search" }));
    root.append(search, this.found,
      el("div", { className: "actions" }, el("label", { for: "tool-filter", text: "Filter tools" }), this.filter), this.count, this.list);
  }

  // The tools that best match the query, as the model's search_tools would find them.
  async search() {
    const query = this.query.value.trim();
    if (!query) { this.found.replaceChildren(); return; }
    const asked = this.asked = (this.asked ?? 0) + 1;
    try {
      const answer = await api.get(`/api/tools/search?q=${encodeURIComponent(query)}&limit=10`);
      if (asked !== this.asked) return; // a newer search answers
      const hits = answer.tools || [];
      this.found.replaceChildren(
        el("p", { className: "muted", text: hits.length ? `${hits.length} tool(s) match “${query}”, best first:` : `No tool matches “${query}”.` }),
        foundTools(hits));
    } catch (error) {
      if (asked === this.asked) this.found.replaceChildren(el("p", { className: "error", text: error.message }));
    }
  }

  // Show one tool's card: the filter cleared, the card scrolled to and its title focused.
  reveal(name) {
    const card = this.cards.get(name);
    if (!card) { this.say(`no tool ${name} (it may have been removed)`); return false; }
    this.filter.value = "";
    this.applyFilter();
    const title = card.section.querySelector("h3");
    title.tabIndex = -1;
    card.section.scrollIntoView({ block: "start" });
    title.focus();
    return true;
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
    // a card rebuilt while its call runs (run_code's stubs change with the registry) keeps
    // the result region that call writes into
    const result = old ? old.result : el("section", { className: "result", "aria-label": "result", "aria-live": "polite" });
    const run = el("button", { type: "button", className: "primary", text: "Run" });
    const hints = Object.entries(tool.annotations || {}).filter(([, on]) => on).map(([hint]) => HINTS[hint] || hint);
    const section = el("section", { className: "tool", "aria-labelledby": titleId, "data-tool": tool.name },
      el("h3", { id: titleId, text: tool.name }),
      describe(tool.description),
      el("p", { className: "muted", text: [tool.owner, ...hints].filter(Boolean).join(" · ") }),
      el("form", { onsubmit: (event) => { event.preventDefault(); this.run(tool.name, form, result, run); } },
        form.element, el("div", { className: "actions" }, run)),
      result);
    run.type = "submit";
    if (old && old.busy) run.disabled = true;
    return { key, section, result, description: tool.description, name: tool.name, button: run, busy: old?.busy ?? false };
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
    const state = el("span", { className: statusClass("running"), text: "running…" });
    const cancel = el("button", { type: "button", text: "Cancel" });
    const activity = callActivity(name);
    const run = { id, region: result, state, cancel, activity, approvals: el("div"), nested: el("div", { className: "nested-calls" }), inner: new Map(), done: false };
    cancel.addEventListener("click", () => this.cancel(run));
    this.runs.set(id, run);
    const card = this.cards.get(name);
    if (card) card.busy = true;
    button.disabled = true;
    result.replaceChildren(el("p", { className: "actions" }, state, cancel), activity.element, run.approvals, run.nested);
    try {
      const outcome = await api.post(`/api/tools/${encodeURIComponent(name)}/call`, { args, id });
      this.showResult(result, outcome);
    } catch (error) {
      result.replaceChildren(el("p", { className: "error", text: error.message }));
    } finally {
      run.done = true;
      this.runs.delete(id);
      const now = this.cards.get(name);
      if (now) { now.busy = false; now.button.disabled = false; }
      button.disabled = false;
    }
  }

  // Cancel: the server ends the call `cancelled` (its answer to the Run shows it). A click
  // that beats the call to the server (a 404 while the Run is still on its way) tries again.
  async cancel(run) {
    run.cancel.disabled = true;
    run.cancel.textContent = "Cancelling…";
    for (let attempt = 0; ; attempt += 1) {
      try {
        await api.post(`/api/calls/${encodeURIComponent(run.id)}/cancel`, {});
        return;
      } catch (error) {
        if (run.done) return; // it finished meanwhile
        if (!(error instanceof ApiError) || error.status !== 404 || attempt >= 10) {
          run.cancel.disabled = false;
          run.cancel.textContent = "Cancel";
          this.say(error.message);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  showResult(region, outcome) {
    const code = outcome.code ?? null;
    region.replaceChildren(...[
      el("p", {}, el("span", { className: statusClass(statusOf(outcome)), text: code ? `error code: ${code}` : "done" }),
        el("span", { className: "muted", text: ` · ${duration(outcome.duration_ms)}` })),
      outcome.error ? el("p", { className: "error", text: outcome.error }) : null,
      el("h4", { text: "Rendered" }), renderBlocks(outcome.content),
      el("h4", { text: "Canonical JSON" }), json(outcome.result)].filter(Boolean));
  }

  // A call a program of one of this page's runs makes (code/call), and its result.
  innerCall(event) {
    const run = this.runs.get(ownerOf(event.id));
    if (!run || run.inner.has(event.id)) return;
    const card = liveCard(event.id, event.name, event.args);
    card.activity = callActivity(String(event.name ?? "tool"));
    card.article.insertBefore(card.activity.element, card.approval);
    run.inner.set(event.id, card);
    run.nested.append(card.article);
  }

  innerResult(event) {
    const card = this.runs.get(ownerOf(event.id))?.inner.get(event.id);
    if (card) card.finish(event.result || {}, event.duration_ms);
  }

  // What one of this page's calls reports while it runs (tool/progress, tool/log): in its
  // inner card when a program made it, else in the run's result region.
  activity(event) {
    const run = this.runs.get(ownerOf(event.id));
    if (!run) return;
    const shown = run.inner.get(event.id)?.activity ?? (event.id === run.id ? run.activity : null);
    if (shown) (event.type === "tool/log" ? shown.log(event) : shown.progress(event));
  }

  // An approval request for one of this page's calls: inside the card of the program's call
  // it concerns, else in the run's result region.
  approval(request) {
    const run = this.runs.get(ownerOf(request.call_id));
    if (!run) return false;
    const inner = run.inner.get(request.call_id);
    const waiting = request.question ? "waiting for an answer" : "waiting for approval";
    if (inner) {
      inner.setStatus(waiting);
      inner.approval.replaceChildren(approvalPanel(request, this.say));
    } else {
      run.state.textContent = waiting;
      run.state.className = statusClass(waiting);
      run.approvals.replaceChildren(approvalPanel(request, this.say));
    }
    return true;
  }

  decided(event) {
    for (const run of this.runs.values()) {
      const panel = run.region.querySelector(`[data-approval="${CSS.escape(event.id)}"]`);
      if (!panel) continue;
      const question = panel.dataset.question === "true"; // answered or declined, it runs on
      const denied = event.decision === "deny" && !question;
      const inner = run.inner.get(event.call_id);
      if (inner) inner.setStatus(denied ? "denied" : "running");
      else {
        run.state.textContent = denied ? "denied…" : question ? "running…" : "approved, running…";
        run.state.className = statusClass(denied ? "denied" : "running");
      }
      panel.replaceWith(decisionNote(panel, event));
      return true;
    }
    return false;
  }
}

// The page's own call a call id belongs to: a program's call is "<the program's call>/<n>".
function ownerOf(callId) {
  return String(callId ?? "").split("/")[0];
}

// A description: its first paragraph, and the rest folded (run_code's stubs, say), under its
// own first line when that introduces it ("The tools, as Python stubs (...):").
function describe(text) {
  const all = String(text ?? "");
  const cut = all.search(/\n[ \t]*\n/);
  const first = cut < 0 ? all : all.slice(0, cut);
  const box = el("div", { className: "description" }, prose(first));
  if (cut < 0 || (first.match(/```/g) || []).length % 2) return box; // no rest, or inside a fence
  const rest = all.slice(cut).replace(/^\s*\n/, "");
  const lead = rest.split("\n")[0].trim();
  const titled = lead.endsWith(":") && lead.length <= 120 && !lead.startsWith("```");
  box.append(el("details", {},
    el("summary", {}, ...inline(titled ? lead.slice(0, -1) : "More")),
    prose(titled ? rest.slice(rest.indexOf("\n") + 1) : rest)));
  return box;
}
