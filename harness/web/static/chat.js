// Chat: sessions (new, list, resume, delete), a message box, the streamed answer, one card
// per tool call (name, status, arguments, duration, render blocks) with its approval inside,
// and Stop. The turn's events arrive on the live stream; a resumed session replays its log.
// The conversation follows the newest content while the reader is at its end, and stays put
// once they scroll up (a button then jumps to the newest). Enter sends, Shift+Enter adds a line.
// The Sessions list searches the conversations (?q=), renames, exports and deletes; each
// finished turn has a Trajectory button (steps, model time, tokens, each call's outcome).
// A search_tools card lists the tools found (names linking to their Tools page cards).

import { api } from "./api.js";
import { callActivity } from "./activity.js";
import { approvalPanel, decisionNote } from "./approval.js";
import { duration, el, foundTools, inline, json, prose, renderBlocks, statusClass, statusOf } from "./render.js";

const SEARCH_TOOL = "search_tools";

const BOTTOM = 24; // px: this close to the end counts as "at the newest message"

export class ChatView {
  constructor(root, say) {
    this.root = root;
    this.say = say;
    this.session = null;
    this.seq = -1;
    this.cards = new Map();
    this.assistant = null;
    this.busy = false;
    this.notice = el("div", { className: "notice", role: "note", hidden: true });
    this.sessionList = el("ul", { "aria-label": "sessions" });
    this.search = el("input", { type: "search", "aria-label": "Search sessions", placeholder: "Search sessions" });
    this.search.addEventListener("input", () => this.refreshSessions());
    this.newButton = el("button", { type: "button", className: "primary", text: "New session", onclick: () => this.create() });
    this.conversation = el("div", { className: "conversation", role: "log", "aria-label": "conversation", "aria-live": "polite" });
    this.scroller = el("div", { className: "scroller" }, this.conversation);
    this.follow = true;
    this.autoTop = 0; // where following last put the view
    this.newest = el("button", { type: "button", className: "newest", text: "Jump to the newest", hidden: true, onclick: () => this.toBottom() });
    // Scroll events come a frame late: by then more may have arrived, so "not at the end" is
    // no sign of the reader. Only a view above where following put it is.
    this.scroller.addEventListener("scroll", () => {
      if (this.atBottom()) {
        this.follow = true;
        this.newest.hidden = true;
      } else if (this.scroller.scrollTop < this.autoTop - 2) {
        this.follow = false;
      }
    });
    // the log's height changes with every message, delta, card, image or opened details
    new ResizeObserver(() => {
      if (this.follow) this.toBottom();
      else this.newest.hidden = false;
    }).observe(this.conversation);
    this.message = el("textarea", { id: "message", rows: 3 });
    this.send = el("button", { type: "submit", className: "primary", text: "Send" });
    this.stop = el("button", { type: "button", text: "Stop", disabled: true, onclick: () => this.cancel() });
    this.turnState = el("p", { className: "muted", role: "status" });
    this.message.addEventListener("keydown", (event) => {
      // Enter sends; Shift+Enter is a new line; Enter that ends an IME composition is not a send
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
        event.preventDefault();
        this.submit();
      }
    });
    const composer = el("form", { className: "composer", onsubmit: (event) => { event.preventDefault(); this.submit(); } },
      el("label", { for: "message", text: "Message" }), this.message,
      el("div", { className: "actions" }, this.send, this.stop, el("span", { className: "muted", text: "Enter sends · Shift+Enter adds a line" })));
    this.body = el("div", { className: "chat" },
      el("aside", { className: "sessions", "aria-label": "sessions" }, el("h2", { text: "Sessions" }), this.newButton, this.search, this.sessionList),
      el("div", { className: "talk" }, this.scroller, this.newest, this.turnState, composer));
    root.append(this.notice, this.body);
  }

  async load() {
    try {
      this.show(await api.get(this.listPath()));
      this.notice.hidden = true;
      this.body.hidden = false;
    } catch (error) {
      if (error.status === 503) {
        this.notice.replaceChildren(el("h3", { text: "No agent to chat with" }),
          ...error.message.split("\n").map((line) => el("p", {}, ...inline(line))));
        this.notice.hidden = false;
        this.body.hidden = true;
        return;
      }
      throw error;
    }
  }

  listPath() {
    const q = this.search.value.trim();
    return q ? `/api/sessions?q=${encodeURIComponent(q)}` : "/api/sessions";
  }

  show(sessions) {
    const when = (stamp) => (stamp ? new Date(stamp).toLocaleString() : "—");
    this.sessionList.replaceChildren(...sessions.map((item) => {
      const title = item.title || item.id;
      const id = encodeURIComponent(item.id);
      return el("li", { className: item.id === this.session ? "current" : "" },
        el("button", { type: "button", className: "open", text: title, "aria-label": `Resume ${title}`, "aria-current": item.id === this.session ? "true" : null, onclick: () => this.open(item.id) }),
        el("p", { className: "muted meta", text: `${item.turns} turn${item.turns === 1 ? "" : "s"} · created ${when(item.created)} · updated ${when(item.updated)}` }),
        el("div", { className: "row" },
          el("button", { type: "button", text: "Rename", "aria-label": `Rename ${title}`, onclick: () => this.rename(item.id, title) }),
          el("a", { className: "button", text: "Export", href: `/api/sessions/${id}/export`, download: `session-${item.id}.jsonl`, "aria-label": `Export ${title}` }),
          el("button", { type: "button", className: "danger", text: "Delete", "aria-label": `Delete ${title}`, onclick: () => this.remove(item.id, title) })));
    }));
    if (!sessions.length) this.sessionList.append(el("li", { className: "muted", text: this.search.value.trim() ? "no session mentions that" : "no sessions yet" }));
  }

  async refreshSessions() {
    try { this.show(await api.get(this.listPath())); } catch (error) { if (error.status === 400) this.say(error.message); }
  }

  async rename(id, title) {
    const given = window.prompt("A new title for the session", title);
    if (given === null || !given.trim()) return;
    try {
      await api.patch(`/api/sessions/${encodeURIComponent(id)}`, { title: given });
    } catch (error) {
      this.say(error.message);
    }
    await this.refreshSessions();
  }

  async trajectory(turn, box) {
    if (box.childElementCount) { box.replaceChildren(); return; }
    const data = await api.get(`/api/sessions/${encodeURIComponent(this.session)}/trajectory`);
    const found = data.turns.find((item) => item.turn === turn);
    if (!found) return;
    const count = (value) => (value == null ? "—" : String(value));
    const rows = found.tools.map((call) => el("tr", {},
      el("td", {}, el("code", { text: call.name ?? "?" })),
      el("td", { text: call.duration_ms == null ? "—" : duration(call.duration_ms) }),
      el("td", { text: call.ok == null ? "unfinished" : call.ok ? "ok" : (call.code || "error") })));
    box.replaceChildren(
      el("p", { text: `${found.steps} step${found.steps === 1 ? "" : "s"} · model ${duration(found.model_ms)} · tokens in ${count(found.input_tokens)} · out ${count(found.output_tokens)}` }),
      rows.length
        ? el("table", {}, el("thead", {}, el("tr", {}, el("th", { text: "tool" }), el("th", { text: "duration" }), el("th", { text: "outcome" }))), el("tbody", {}, ...rows))
        : el("p", { className: "muted", text: "no tool calls" }));
  }

  async create() {
    const made = await api.post("/api/sessions", {});
    await this.open(made.id);
    await this.refreshSessions();
    this.message.focus();
  }

  async open(id) {
    this.session = id;
    this.seq = -1;
    this.cards.clear();
    this.assistant = null;
    this.conversation.replaceChildren();
    this.setBusy(false);
    this.toBottom();
    const data = await api.get(`/api/sessions/${encodeURIComponent(id)}`);
    for (const event of data.events) this.apply(event);
    for (const request of await api.get("/api/approvals")) {
      if (request.session === id) this.apply({ ...request, type: "approval/request" });
    }
    await this.refreshSessions();
  }

  async remove(id, title) {
    if (!window.confirm(`Delete the session ${title}? Its log is removed.`)) return;
    await api.del(`/api/sessions/${encodeURIComponent(id)}`);
    if (this.session === id) { this.session = null; this.conversation.replaceChildren(); }
    await this.refreshSessions();
  }

  async submit() {
    const text = this.message.value;
    if (!text.trim()) return;
    if (!this.session) {
      const made = await api.post("/api/sessions", {});
      await this.open(made.id);
    }
    this.message.value = "";
    this.setBusy(true);
    this.toBottom(); // one's own message: back to the newest
    try {
      await api.post(`/api/sessions/${encodeURIComponent(this.session)}/messages`, { text });
    } catch (error) {
      this.setBusy(false);
      this.say(error.message);
    }
  }

  async cancel() {
    if (this.session) await api.post(`/api/sessions/${encodeURIComponent(this.session)}/cancel`, {});
  }

  setBusy(busy) {
    this.busy = busy;
    this.stop.disabled = !busy;
    this.turnState.textContent = busy ? "the model is working…" : "";
  }

  // One live event (or one event of a replayed log).
  event(data) {
    if (!this.session || data.session !== this.session) {
      if (data.type === "turn/end" || data.type === "turn/start") this.refreshSessions();
      return;
    }
    this.apply(data);
  }

  apply(data) {
    if (typeof data.seq === "number") {
      if (data.seq <= this.seq) return;
      this.seq = data.seq;
    }
    switch (data.type) {
      case "turn/start":
        this.conversation.append(this.bubble("you", data.input ?? ""));
        this.assistant = null;
        if (data.live !== false) this.setBusy(true);
        break;
      case "assistant/delta":
        this.write((this.assistant?.text ?? "") + (data.text ?? ""));
        break;
      case "assistant/message":
        if (data.text) this.write(data.text);
        this.assistant = null;
        break;
      case "tool/call":
        this.card(data.id, data.name, data.args, data.parent);
        break;
      case "approval/request": {
        const card = this.cards.get(data.call_id) ?? this.card(data.call_id, data.name, data.args);
        this.setStatus(card, data.question ? "waiting for an answer" : "waiting for approval");
        card.approval.replaceChildren(approvalPanel(data, this.say));
        break;
      }
      case "approval/decided":
        for (const card of this.cards.values()) {
          const panel = card.approval.querySelector(`[data-approval="${CSS.escape(data.id)}"]`);
          if (panel) {
            card.approval.replaceChildren(decisionNote(panel, data));
            if (data.decision !== "deny" || panel.dataset.question === "true") this.setStatus(card, "running");
          }
        }
        break;
      case "tool/progress":
        this.cards.get(data.id)?.activity.progress(data);
        break;
      case "tool/log":
        this.cards.get(data.id)?.activity.log(data);
        break;
      case "tool/result": {
        const result = data.result || {};
        const card = this.cards.get(data.id) ?? this.card(data.id, result.name ?? "tool", {});
        this.setStatus(card, statusOf(result));
        card.approval.replaceChildren();
        card.duration.textContent = duration(data.duration_ms);
        // a program's calls already have live cards inside this one: show the rest of it
        const live = card.nested.childElementCount > 0;
        const program = card.article.querySelector(":scope > pre.block-code") !== null;
        const blocks = (result.content || []).filter((block) => !(block
          && ((live && block.type === "tool_call") || (program && block.type === "code"))));
        const hits = result.result?.tools;
        if (card.name === SEARCH_TOOL && !result.code && Array.isArray(hits)) {
          card.output.replaceChildren(el("p", { className: "muted", text: hits.length ? `found ${hits.length} tool(s):` : "found no tool" }), foundTools(hits));
        } else {
          card.output.replaceChildren(renderBlocks(blocks));
        }
        if (result.error) card.output.append(el("p", { className: "error", text: `${result.code}: ${result.error}` }));
        break;
      }
      case "turn/end":
        this.setBusy(false);
        this.assistant = null;
        if (data.reason && data.reason !== "done") {
          this.conversation.append(el("p", { className: data.reason === "error" ? "error" : "muted", text: `turn ended: ${data.reason}${data.error ? ` — ${data.error}` : ""}` }));
        }
        if (typeof data.turn === "number") {
          const box = el("section", { className: "trajectory", "aria-label": `trajectory of turn ${data.turn}` });
          const turn = data.turn;
          this.conversation.append(el("button", { type: "button", className: "link", text: "Trajectory", "aria-label": `Trajectory of turn ${turn}`, onclick: () => this.trajectory(turn, box) }), box);
        }
        this.refreshSessions();
        break;
      case "session/title":
        this.refreshSessions();
        break;
      default:
        break;
    }
  }

  bubble(who, text) {
    return el("div", { className: `message ${who === "you" ? "user" : "assistant"}` },
      el("div", { className: "who", text: who }), prose(text));
  }

  // The answer being streamed: its text so far, shown as prose once per frame.
  write(text) {
    if (!this.assistant) {
      const node = this.bubble("assistant", "");
      this.conversation.append(node);
      this.assistant = { node, text: "", frame: 0 };
    }
    const answer = this.assistant;
    answer.text = text;
    if (!answer.frame) {
      answer.frame = requestAnimationFrame(() => {
        answer.frame = 0;
        answer.node.lastChild.replaceWith(prose(answer.text));
      });
    }
  }

  atBottom() {
    const box = this.scroller;
    return box.scrollHeight - box.scrollTop - box.clientHeight <= BOTTOM;
  }

  toBottom() {
    this.follow = true;
    this.newest.hidden = true;
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.autoTop = this.scroller.scrollTop;
  }

  card(id, name, args, parent) {
    const status = el("span", { className: statusClass("running"), text: "running" });
    const duration = el("span", { className: "muted" });
    const approval = el("div");
    const output = el("div");
    const nested = el("div", { className: "nested-calls" });
    const activity = callActivity(name);
    const inside = parent ? this.cards.get(parent) : undefined;
    const shown = name === "run_code" && args && typeof args.code === "string"
      ? el("pre", { className: "block-code", "aria-label": "program" }, el("code", { text: args.code }))
      : el("details", { open: !inside }, el("summary", { text: "arguments" }), json(args));
    const article = el("article", { className: inside ? "card nested" : "card", "aria-label": `tool call ${name}`, "data-call": id },
      el("h3", {}, el("code", { text: name }), " — ", status, " ", duration),
      shown, activity.element, approval, nested, output);
    (inside ? inside.nested : this.conversation).append(article);
    const card = { name, article, status, duration, approval, output, nested, activity };
    this.cards.set(id, card);
    return card;
  }

  setStatus(card, status) {
    card.status.textContent = status;
    card.status.className = statusClass(status);
  }
}
