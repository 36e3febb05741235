// Plugins: the entry tree with states, errors (file, line, entry), a switch per entry that
// edits cordis.yml through the CLI's write-back, and the problems `harness check` lists.

import { api } from "./api.js";
import { el } from "./render.js";

function where(problem) {
  const line = problem.line == null ? "" : `:${problem.line}`;
  const entry = problem.entry ? ` entry ${problem.entry}` : "";
  return `${problem.file}${line}${entry}`;
}

function problemItem(problem) {
  return el("li", {}, el("code", { text: where(problem) }), ": ", el("span", { className: "error", text: problem.message }));
}

export class PluginsView {
  constructor(root, say) {
    this.root = root;
    this.say = say;
    this.status = el("p", { role: "status", className: "muted" });
    this.tree = el("ul", { className: "tree", "aria-label": "entries" });
    this.problems = el("section", { "aria-labelledby": "problems-title" });
    root.append(el("p", { className: "muted", text: "Each switch edits cordis.yml in place (comments kept); the hot reload then loads or unloads the entry." }),
      this.status, this.tree, this.problems);
  }

  async load() {
    const [plugins, problems] = await Promise.all([api.get("/api/plugins"), api.get("/api/problems")]);
    this.show(plugins, problems.problems);
  }

  show(plugins, problems) {
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.entry : null;
    const lists = new Map([[null, this.tree]]);
    const fresh = el("ul", { className: "tree", "aria-label": "entries" });
    lists.set(null, fresh);
    for (const entry of plugins) {
      const parent = lists.get(entry.group ?? null) ?? fresh;
      const box = el("input", { type: "checkbox", id: `enabled-${entry.id}`, "aria-label": `enabled ${entry.id}`, "data-entry": entry.id });
      box.checked = entry.enabled;
      box.addEventListener("change", () => this.toggle(entry.id, box));
      const item = el("li", { className: "entry", "data-id": entry.id },
        box, " ", el("label", { for: box.id, text: entry.id }),
        entry.name ? el("span", { className: "name", text: entry.name }) : el("span", { className: "muted", text: "group" }),
        " ", el("span", { className: `state state-${entry.state}`, text: entry.state }),
        entry.tools.length ? el("div", { className: "muted", text: `tools: ${entry.tools.join(", ")}` }) : null,
        entry.error ? el("div", { className: "error", text: entry.error }) : null,
        entry.problems.length ? el("ul", { className: "entry-problems" }, ...entry.problems.map(problemItem)) : null);
      if (!entry.name) {
        const children = el("ul");
        item.append(children);
        lists.set(entry.id, children);
      }
      parent.append(item);
    }
    this.tree.replaceWith(fresh);
    this.tree = fresh;
    this.problems.replaceChildren(el("h3", { id: "problems-title", text: "Problems" }),
      problems.length ? el("ul", {}, ...problems.map(problemItem)) : el("p", { className: "muted", text: "No problems: harness check passes." }));
    if (focused) {
      const again = this.tree.querySelector(`input[data-entry="${CSS.escape(focused)}"]`);
      if (again) again.focus();
    }
  }

  async toggle(id, box) {
    const on = box.checked;
    box.disabled = true;
    try {
      const done = await api.post(`/api/plugins/${encodeURIComponent(id)}/${on ? "enable" : "disable"}`, {});
      this.status.textContent = done.changed ? `${id} ${on ? "enabled" : "disabled"} in ${done.file}; reloading…` : `${id} was already ${on ? "enabled" : "disabled"}`;
    } catch (error) {
      box.checked = !on;
      this.status.textContent = `could not switch ${id}: ${error.message}`;
      this.say(error.message);
    } finally {
      box.disabled = false;
    }
  }
}
