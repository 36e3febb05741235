// What a running call reports, shown in its card: a progress bar (tool/progress: done of
// total, and its message; no total, a bar that says it is busy) and its log (tool/log, one
// line per entry: level, message, data).

import { el, visible } from "./render.js";

export function callActivity(name) {
  const bar = el("progress", { "aria-label": `progress of ${name}` });
  const note = el("span", { className: "muted" });
  const line = el("p", { className: "progress", hidden: true }, bar, " ", note);
  const lines = el("ol", { className: "call-log", "aria-label": `log of ${name}`, hidden: true });
  return {
    element: el("div", { className: "activity" }, line, lines),
    progress(data) {
      line.hidden = false;
      const done = Number(data.done);
      const total = data.total == null ? null : Number(data.total);
      if (total !== null && total > 0) {
        bar.max = total;
        bar.value = Math.min(Math.max(done, 0), total);
      } else {
        bar.removeAttribute("value"); // no total: busy, how far unknown
      }
      const count = total !== null ? `${done} of ${total}` : String(done);
      note.textContent = data.message ? `${count} · ${visible(data.message)}` : count;
    },
    log(data) {
      lines.hidden = false;
      const extra = data.data && Object.keys(data.data).length ? ` ${visible(JSON.stringify(data.data))}` : "";
      lines.append(el("li", { className: `log-${data.level}` },
        el("span", { className: "level", text: String(data.level ?? "info") }), " ",
        visible(String(data.message ?? "")), extra));
      while (lines.children.length > 200) lines.firstChild.remove();
    },
  };
}
