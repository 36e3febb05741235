// The console: four views behind hash routes, kept live by the event stream.

import { api, Live } from "./api.js";
import { ChatView } from "./chat.js";
import { PluginsView } from "./plugins.js";
import { el } from "./render.js";
import { approvalPanel } from "./approval.js";
import { TasksView } from "./tasks.js";
import { ToolsView } from "./tools.js";

const live = document.getElementById("live");
const activity = document.querySelector("#activity ol");
const approvals = document.getElementById("approvals");

function say(message) {
  live.textContent = message;
}

const views = {
  chat: new ChatView(document.getElementById("view-chat"), say),
  plugins: new PluginsView(document.getElementById("view-plugins"), say),
  tools: new ToolsView(document.getElementById("view-tools"), say),
  tasks: new TasksView(document.getElementById("view-tasks"), say),
};

function route() {
  const name = (location.hash.match(/^#\/(\w+)/) || [])[1];
  const current = name in views ? name : "chat";
  for (const [key] of Object.entries(views)) {
    document.getElementById(`view-${key}`).hidden = key !== current;
  }
  for (const link of document.querySelectorAll("nav a")) {
    if (link.dataset.view === current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  return current;
}

// #/tools?tool=NAME (a found tool's link): the Tools page, at that tool's card
function wantedTool() {
  const match = location.hash.match(/^#\/tools\?tool=([^&]*)/);
  return match ? decodeURIComponent(match[1]) : null;
}

window.addEventListener("hashchange", () => {
  const current = route();
  if (current === "tasks") views.tasks.load().catch((error) => say(error.message));
  const tool = current === "tools" ? wantedTool() : null;
  if (tool === null || !views.tools.reveal(tool)) document.getElementById(`${current}-title`).focus();
});

// The model the Chat talks to, in the header (the demo model says it is one).
async function loadModel() {
  const shown = document.getElementById("model");
  const { model } = await api.get("/api/model").catch(() => ({ model: null }));
  shown.textContent = model ? `model: ${model}` : "";
  shown.hidden = !model;
}

// A page opened at #/tools?tool=NAME (a link followed from elsewhere, a bookmark): its card is
// shown once the tools have loaded, the first time only (a resync must not move the page).
let revealPending = true;

async function loadAll() {
  loadModel();
  await Promise.all(Object.values(views).map((view) => view.load().catch((error) => say(error.message))));
  if (revealPending) {
    revealPending = false;
    const tool = route() === "tools" ? wantedTool() : null;
    if (tool !== null) views.tools.reveal(tool);
  }
  for (const request of await api.get("/api/approvals").catch(() => [])) approvalEvent(request);
}

// Approvals nobody on this page is showing (another page's Run, a script): listed on top.
function approvalEvent(request) {
  if (request.session && request.session === views.chat.session) return;
  if (!request.session && views.tools.approval(request)) return;
  if (approvals.querySelector(`[data-approval="${CSS.escape(request.id)}"]`)) return;
  approvals.append(approvalPanel(request, say));
  approvals.hidden = false;
}

function decidedEvent(event) {
  views.tools.decided(event);
  const panel = approvals.querySelector(`[data-approval="${CSS.escape(event.id)}"]`);
  if (panel) panel.remove();
  approvals.hidden = approvals.children.length === 0;
}

let toolsTimer = null;
function reloadTools() {
  clearTimeout(toolsTimer);
  toolsTimer = setTimeout(() => views.tools.load().catch((error) => say(error.message)), 30);
}

function note(id, type, data) {
  const text = data.session ? `${type} (session ${data.session})` : type;
  activity.append(el("li", { "data-id": id || "" }, el("code", { text: id || "-" }), ` ${text}`));
  while (activity.children.length > 500) activity.firstChild.remove();
}

const stream = new Live((type, data, id) => {
  if (type !== "hello" && type !== "assistant/delta" && type !== "tool/progress") note(id, type, data);
  switch (type) {
    case "hello":
      if (!loaded) { loaded = true; loadAll(); }
      break;
    case "resync":
      loadAll();
      break;
    case "tools/change":
    case "reload/done":
    case "reload/failed":
      reloadTools();
      if (type === "reload/failed") say(`reload failed: ${(data.errors || []).map((p) => p.message).join("; ")}`);
      break;
    case "plugins/change":
      views.plugins.show(data.plugins, data.problems);
      loadModel();
      views.chat.load().catch((error) => say(error.message)); // an agent came or went
      break;
    case "approval/request":
      if (data.session) views.chat.event(data);
      approvalEvent(data);
      break;
    case "approval/decided":
      views.chat.event(data);
      decidedEvent(data);
      break;
    case "code/call":
      views.tools.innerCall(data);
      break;
    case "code/result":
      views.tools.innerResult(data);
      break;
    case "tool/progress":
    case "tool/log":
      if (data.session) views.chat.event(data);
      else views.tools.activity(data);
      break;
    default:
      if (data.session !== undefined) views.chat.event(data);
  }
}, (state) => {
  live.textContent = state === "live" ? "live" : state === "down" ? "disconnected: retrying…" : "reconnecting…";
  live.classList.toggle("down", state !== "live");
});

let loaded = false;
route();
stream.start();
