// Content blocks for people: text as preformatted text, images inline. Everything is
// inserted as text or as attributes checked here; nothing is ever parsed as HTML.

const IMAGE_MIME = /^image\/[a-z0-9.+-]+$/i;
const BASE64 = /^[A-Za-z0-9+/=\s]*$/;
const DATA_URL = /^data:image\/[a-z0-9.+-]+;base64,[A-Za-z0-9+/=\s]*$/i;

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "className") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

// Control and bidirectional characters made visible, so an argument shows what will run.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;

export function visible(text) {
  return String(text).replace(HIDDEN, (char) => `\\u{${char.codePointAt(0).toString(16).padStart(4, "0")}}`);
}

export function json(value) {
  return el("pre", { className: "json", text: visible(JSON.stringify(value, null, 2) ?? "undefined") });
}

export function imageSource(block) {
  if (typeof block.url === "string") {
    const url = block.url.trim();
    if (DATA_URL.test(url)) return url;
    try {
      const parsed = new URL(url);
      if (parsed.protocol === "http:" || parsed.protocol === "https:") return parsed.href;
    } catch {
      return null;
    }
    return null;
  }
  if (typeof block.data === "string" && typeof block.mime_type === "string"
      && IMAGE_MIME.test(block.mime_type) && BASE64.test(block.data)) {
    return `data:${block.mime_type};base64,${block.data.replace(/\s/g, "")}`;
  }
  return null;
}

export function renderBlocks(blocks) {
  const out = el("div", { className: "blocks" });
  for (const block of Array.isArray(blocks) ? blocks : []) {
    if (block && block.type === "text") {
      out.append(el("pre", { className: "block-text", text: String(block.text ?? "") }));
    } else if (block && block.type === "image") {
      const src = imageSource(block);
      if (src) {
        out.append(el("img", { className: "block-image", src, alt: block.alt || block.name || "image",
          referrerpolicy: "no-referrer", loading: "lazy" }));
      } else {
        out.append(el("p", { className: "error", text: "image not shown: only data: and http(s) image URLs are displayed" }));
      }
    } else if (block && block.type === "code") {
      out.append(el("pre", { className: "block-code", "aria-label": "program" },
        el("code", { text: String(block.text ?? "") })));
    } else if (block && block.type === "tool_call") {
      out.append(callCard(block));
    } else {
      out.append(json(block));
    }
  }
  return out;
}

// Tools a search found, best first: each name a link to its card on the Tools page, its
// score and the first line of its description (search_tools' result, the Tools search).
export function foundTools(hits) {
  const list = el("ol", { className: "found" });
  for (const hit of Array.isArray(hits) ? hits : []) {
    const name = String(hit?.name ?? "");
    const about = String(hit?.description ?? "").split("\n")[0];
    const score = Number(hit?.score);
    list.append(el("li", { "data-found": name },
      el("a", { href: `#/tools?tool=${encodeURIComponent(name)}`, className: "tool-link" }, el("code", { text: name })),
      el("span", { className: "muted score", text: Number.isFinite(score) ? ` score ${score.toFixed(2)}` : "" }),
      about ? ` — ${about}` : ""));
  }
  return list;
}

// A call a run_code program made, as a nested card (a "tool_call" block).
export function callCard(block) {
  const card = liveCard(block.id ?? "", block.name, block.args);
  card.finish(block, block.duration_ms, block.status);
  return card.article;
}

// A nested card that starts "running" and is finished when its result comes (the Tools
// page's live cards of a program's calls; callCard's finished ones).
export function liveCard(id, name, args) {
  const status = el("span", { className: statusClass("running"), text: "running" });
  const took = el("span", { className: "muted" });
  const approval = el("div");
  const output = el("div");
  const article = el("article", { className: "card nested", "aria-label": `tool call ${name}`, "data-call": id },
    el("h3", {}, el("code", { text: String(name ?? "tool") }), " — ", status, " ", took),
    el("details", {}, el("summary", { text: "arguments" }), json(args ?? {})), approval, output);
  const setStatus = (text) => { status.textContent = text; status.className = statusClass(text); };
  return {
    article, approval, setStatus,
    finish(result, ms, shown) {
      setStatus(shown ?? statusOf(result));
      took.textContent = duration(ms);
      approval.replaceChildren();
      output.replaceChildren(renderBlocks(result.content));
      if (result.error) output.append(el("p", { className: "error", text: `${result.code}: ${result.error}` }));
    },
  };
}

const STATUS = { null: "done", denied: "denied", cancelled: "cancelled", timeout: "timeout" };

export function statusOf(result) {
  if (!result) return "running";
  const code = result.code ?? null;
  return STATUS[code] ?? "error";
}

export function statusClass(status) {
  return `status status-${status.replace(/\s+/g, "-")}`;
}

// Prose for people (a message, a description, a notice): text in a proportional font, with
// fenced ``` blocks as preformatted code and `inline code` as code, all inserted as text.
// An unclosed fence (an answer still streaming) is code up to the end.
export function prose(text) {
  const out = el("div", { className: "prose" });
  let lines = [];
  let fence = null; // the open fence's code lines, or null in prose
  const flush = () => { // a blank line ends a paragraph; other line breaks are kept
    for (const chunk of lines.join("\n").split(/\n[ \t]*\n/)) {
      const text = chunk.replace(/^\n+|\n+$/g, "");
      if (text) out.append(el("p", {}, ...inline(text)));
    }
    lines = [];
  };
  for (const line of String(text ?? "").split("\n")) {
    if (/^ {0,3}```/.test(line)) {
      if (fence === null) { flush(); fence = []; } else { out.append(codeBlock(fence)); fence = null; }
    } else if (fence !== null) {
      fence.push(line);
    } else {
      lines.push(line);
    }
  }
  if (fence !== null) out.append(codeBlock(fence)); else flush();
  return out;
}

function codeBlock(lines) {
  return el("pre", { className: "code" }, el("code", { text: lines.join("\n") }));
}

// `code` spans as <code>, the rest as text nodes.
export function inline(text) {
  return String(text).split(/(`[^`\n]+`)/).filter(Boolean).map((part) => (
    /^`[^`\n]+`$/.test(part) ? el("code", { text: part.slice(1, -1) }) : part));
}

// A duration for people: "<1 ms", "12 ms", "1.4 s", "12 s", "2 min 5 s".
export function duration(ms) {
  const value = Number(ms);
  if (ms === null || ms === undefined || !Number.isFinite(value)) return "";
  if (value < 1) return "<1 ms";
  if (value < 999.5) return `${Math.round(value)} ms`;
  const seconds = value / 1000;
  if (seconds < 9.95) return `${seconds.toFixed(1)} s`;
  if (seconds < 59.5) return `${Math.round(seconds)} s`;
  const minutes = Math.floor(Math.round(seconds) / 60);
  return `${minutes} min ${Math.round(seconds) - minutes * 60} s`;
}
