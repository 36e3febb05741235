// An approval request, shown where the call it concerns is: the tool, the reason, the full
// arguments (control and bidirectional characters made visible), and the four answers. A
// tool's own question (`question: true`) is its form instead (form.js: strings, numbers,
// booleans, enums), answered with Submit (`allow_once` and the form's `content`) or Decline.

import { api } from "./api.js";
import { FieldError, parametersForm } from "./form.js";
import { el, json } from "./render.js";

export function approvalPanel(request, onError) {
  if (request.question) return questionPanel(request, onError);
  const reasonId = `deny-reason-${request.id}`;
  const reason = el("input", { id: reasonId, type: "text", autocomplete: "off" });
  const panel = el("div", { className: "approval", role: "group", "aria-label": `approval for ${request.name}`, "data-approval": request.id },
    el("p", {}, el("strong", { text: "Approval needed: " }), el("code", { text: request.name })),
    el("p", { className: "reason", text: request.reason || "" }),
    el("p", { className: "muted", text: "Arguments, exactly as they will be passed:" }),
    json(request.args));
  const answer = async (decision) => {
    for (const button of panel.querySelectorAll("button")) button.disabled = true;
    try {
      await api.post(`/api/approvals/${encodeURIComponent(request.id)}`,
        { decision, reason: decision === "deny" ? reason.value : null });
    } catch (error) {
      for (const button of panel.querySelectorAll("button")) button.disabled = false;
      onError(error.message);
    }
  };
  panel.append(
    el("div", { className: "actions" },
      el("button", { type: "button", className: "primary", text: "Allow once", onclick: () => answer("allow_once") }),
      el("button", { type: "button", text: "Allow for this session", onclick: () => answer("allow_session") }),
      el("button", { type: "button", text: "Always allow", onclick: () => answer("allow_always") })),
    el("div", { className: "actions" },
      el("label", { for: reasonId, text: "Reason" }), reason,
      el("button", { type: "button", className: "danger", text: "Deny", onclick: () => answer("deny") })));
  return panel;
}

// A running tool's question: its message and its form, in the card of the call.
function questionPanel(request, onError) {
  const asked = request.args && typeof request.args === "object" ? request.args : {};
  const form = parametersForm(request.form || {}, { prefill: true, empty: "" });
  const problem = el("p", { className: "error", role: "alert", hidden: true });
  const panel = el("form", { className: "approval question", "aria-label": `question from ${request.name}`, "data-approval": request.id, "data-question": "true" },
    el("p", {}, el("strong", { text: "Question: " }), el("code", { text: request.name }), " asks"),
    el("p", { className: "reason", text: String(asked.message ?? request.reason ?? "") }),
    form.element, problem);
  const answer = async (decision) => {
    let content;
    if (decision !== "deny") {
      try {
        content = form.read();
      } catch (error) {
        if (!(error instanceof FieldError)) throw error;
        problem.textContent = error.message;
        problem.hidden = false;
        return;
      }
    }
    problem.hidden = true;
    for (const button of panel.querySelectorAll("button")) button.disabled = true;
    try {
      await api.post(`/api/approvals/${encodeURIComponent(request.id)}`,
        decision === "deny" ? { decision } : { decision, content });
    } catch (error) {
      for (const button of panel.querySelectorAll("button")) button.disabled = false;
      problem.textContent = error.message; // the server's word on what does not fit
      problem.hidden = false;
      onError(error.message);
    }
  };
  panel.addEventListener("submit", (event) => { event.preventDefault(); answer("allow_once"); });
  panel.append(el("div", { className: "actions" },
    el("button", { type: "submit", className: "primary", text: "Submit" }),
    el("button", { type: "button", text: "Decline", onclick: () => answer("deny") })));
  return panel;
}

// What a decided request leaves in the card: the decision, or a question's outcome.
export function decisionNote(panel, event) {
  const question = panel && panel.dataset.question === "true";
  const what = question ? (event.decision === "deny" ? "declined" : "answered") : event.decision.replace("_", " ");
  return el("p", { className: "muted", text: `${what}${event.reason ? `: ${event.reason}` : ""}` });
}
