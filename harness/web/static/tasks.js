// Tasks: the MCP tasks of this server (GET /api/tasks), newest first: id, tool, status, the
// status message (the body's latest progress or log entry), when each was created and last
// updated, and Cancel for one still running (POST /api/tasks/{id}/cancel). Refreshed every
// two seconds while shown; nothing else pushes task changes to the page.

import { api } from "./api.js";
import { el, visible } from "./render.js";

const REFRESH_MS = 2000;
const RUNNING = new Set(["working", "input_required"]);
const STATUS_CLASS = {
  working: "status-running", input_required: "status-waiting-for-an-answer",
  completed: "status-done", failed: "status-error", cancelled: "status-cancelled",
};

function when(stamp) {
  const date = new Date(stamp);
  return el("time", { datetime: stamp, title: stamp, text: Number.isNaN(date.getTime()) ? stamp : date.toLocaleString() });
}

export class TasksView {
  constructor(root, say) {
    this.root = root;
    this.say = say;
    this.status = el("p", { className: "muted", role: "status" });
    this.body = el("tbody");
    this.table = el("table", { className: "tasks", "aria-label": "tasks" },
      el("thead", {}, el("tr", {}, ...["Task", "Tool", "Status", "Message", "Created", "Updated", ""].map((text) => el("th", { scope: "col", text })))),
      this.body);
    root.append(el("p", { className: "muted", text: "Calls MCP clients run as tasks (the io.modelcontextprotocol/tasks extension); refreshed every two seconds while shown." }),
      this.status, this.table);
    setInterval(() => { if (!this.root.hidden) this.load().catch((error) => this.say(error.message)); }, REFRESH_MS);
  }

  async load() {
    this.show(await api.get("/api/tasks"));
  }

  show(tasks) {
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.task : null;
    this.status.textContent = tasks.length ? `${tasks.length} task(s)` : "No tasks: none was started, or all have expired.";
    this.table.hidden = tasks.length === 0;
    this.body.replaceChildren(...tasks.map((task) => this.row(task)));
    if (focused) {
      const again = this.body.querySelector(`button[data-task="${CSS.escape(focused)}"]`);
      if (again) again.focus();
    }
  }

  row(task) {
    const cancel = RUNNING.has(task.status)
      ? el("button", { className: "danger", type: "button", "data-task": task.id, "aria-label": `cancel task ${task.id}`, text: "Cancel", onclick: () => this.cancel(task.id, cancel) })
      : null;
    return el("tr", { "data-task": task.id },
      el("td", {}, el("code", { text: task.id })),
      el("td", { text: visible(task.tool) }),
      el("td", {}, el("span", { className: `status ${STATUS_CLASS[task.status] || ""}`, text: task.status })),
      el("td", { text: task.statusMessage == null ? "" : visible(task.statusMessage) }),
      el("td", {}, when(task.createdAt)),
      el("td", {}, when(task.lastUpdatedAt)),
      el("td", {}, cancel));
  }

  async cancel(id, button) {
    button.disabled = true;
    try {
      const done = await api.post(`/api/tasks/${encodeURIComponent(id)}/cancel`, {});
      this.status.textContent = `task ${id}: ${done.status}`;
      await this.load();
    } catch (error) {
      button.disabled = false;
      this.say(`could not cancel task ${id}: ${error.message}`);
    }
  }
}
