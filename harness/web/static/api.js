// The console's only door to the server: the JSON API and the live event stream.

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

async function request(method, path, body) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (method !== "GET") {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body ?? {});
  }
  const response = await fetch(path, init);
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message = (data && data.error) || `${method} ${path}: HTTP ${response.status}`;
    throw new ApiError(response.status, message, data);
  }
  return data;
}

export const api = {
  get: (path) => request("GET", path),
  post: (path, body) => request("POST", path, body),
  del: (path) => request("DELETE", path, {}),
  patch: (path, body) => request("PATCH", path, body),
};

// Every live event type the server sends (agent events carry `session`).
const TYPES = [
  "hello", "resync", "tools/change", "plugins/change", "reload/start", "reload/done",
  "reload/failed", "approval/request", "approval/decided", "turn/start", "step/start",
  "assistant/delta", "assistant/message", "tool/call", "tool/result", "step/end", "turn/end", "session/title",
  "code/call", "code/result", "tool/progress", "tool/log",
];

// The event stream: EventSource reconnects by itself and sends Last-Event-ID; if it gives up
// (the server answered an error), a new one resumes from the last id through the query.
export class Live {
  constructor(onEvent, onState) {
    this.onEvent = onEvent;
    this.onState = onState;
    this.lastId = null;
    this.source = null;
    this.timer = null;
  }

  start() {
    const url = this.lastId
      ? `/api/events?last_event_id=${encodeURIComponent(this.lastId)}`
      : "/api/events";
    const source = new EventSource(url);
    this.source = source;
    source.onopen = () => this.onState("live");
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        this.onState("down");
        clearTimeout(this.timer);
        this.timer = setTimeout(() => this.start(), 1500);
      } else {
        this.onState("reconnecting");
      }
    };
    for (const type of TYPES) {
      source.addEventListener(type, (message) => {
        if (message.lastEventId) this.lastId = message.lastEventId;
        let data;
        try {
          data = JSON.parse(message.data);
        } catch {
          return;
        }
        this.onEvent(type, data, message.lastEventId);
      });
    }
  }
}
