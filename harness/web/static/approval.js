// An approval request, shown where the call it concerns is: the tool, the reason, the full
// arguments (control and bidirectional characters made visible), and the four answers.

import { api } from "./api.js";
import { el, json } from "./render.js";

export function approvalPanel(request, onError) {
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
