// The placeholder page of `codecoder serve`: the session list with search, one hosted
// session's live transcript from its event stream, its pending approvals, and a composer.
// Every call goes to this server's own API (same origin, the session cookie); calls are
// rendered from their `view` (the tool's own description), never from a tool's name.
"use strict";

const $ = (id) => document.getElementById(id);
let current = null;
let currentLive = false;
let stream = null;
let defaultCwd = null;

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const answer = await fetch(path, init);
  const data = await answer.json().catch(() => ({}));
  if (!answer.ok) throw new Error(data.error || answer.statusText);
  return data;
}

function add(parent, tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  parent.appendChild(node);
  return node;
}

async function listSessions() {
  const q = encodeURIComponent($("search").value);
  const { sessions } = await api("GET", `/api/sessions?q=${q}`);
  const list = $("sessions");
  list.replaceChildren();
  for (const s of sessions) {
    const item = add(list, "li", s.id === current ? "current" : "", s.title || "(no prompt yet)");
    add(item, "small", "", `${s.live ? "live · " : ""}${s.cwd}`);
    item.addEventListener("click", () => open(s));
  }
}

function open(session) {
  current = session.id;
  currentLive = session.live;
  if (stream) stream.close();
  $("transcript").replaceChildren();
  $("approvals").replaceChildren();
  $("send").textContent = "Send";
  listSessions();
  if (!session.live) {
    $("cancel").hidden = true;
    add($("transcript"), "div", "note", "Not running in this server: its history, from the log.");
    openHistory(session);
    return;
  }
  $("cancel").hidden = false;
  stream = new EventSource(`/api/sessions/${session.id}/events`);
  stream.onmessage = (message) => show(JSON.parse(message.data));
}

async function openHistory(session) {
  try {
    const { events } = await api("GET", `/api/sessions/${session.id}/history`);
    for (const record of events) show(record);
  } catch (err) {
    add($("transcript"), "div", "note", err.message);
  }
}

let text = null;

// One record of the live stream or of the replayed history, rendered from its data.
function show(data) {
  const resolved = data.approvalResolved || data.questionResolved;
  if (resolved) {
    document.getElementById(`approval-${resolved.id}`)?.remove();
    return;
  }
  if (data.user) {
    const typed = data.user.content.filter((item) => item.type === "text").map((item) => item.text);
    add($("transcript"), "div", "user", typed.join("\n"));
    text = null;
    return;
  }
  if (!data.event) return;
  const kind = data.event.kind;
  const view = kind.view || {};
  // A subagent's own steps are its business; only what it asks of the person is shown.
  const fromSubagent = (data.event.source.subagentPath || []).length > 0;
  if (fromSubagent && kind.type !== "approval_request" && kind.type !== "ask_user") return;
  switch (kind.type) {
    case "text_delta":
      text = text || add($("transcript"), "div", "agent", "");
      text.textContent += kind.delta;
      break;
    case "agent_message":
    case "step_finished":
      if (kind.text) {
        text = text || add($("transcript"), "div", "agent", "");
        text.textContent = kind.text;
      }
      text = null;
      break;
    case "tool_started":
      add($("transcript"), "div", "tool", `▸ ${view.title || view.kind?.type || "call"}`);
      break;
    case "tool_finished": {
      const failed = kind.result && kind.result.Err !== undefined;
      add($("transcript"), "div", failed ? "tool failed" : "tool",
        `${failed ? "✗" : "✓"} ${view.title || view.kind?.type || "call"}`);
      break;
    }
    case "approval_request":
      showApproval(kind);
      break;
    case "ask_user":
      showQuestion(kind);
      break;
    case "warning":
      add($("transcript"), "div", "note", kind.message);
      break;
    case "turn_done":
      text = null;
      $("approvals").replaceChildren();
      break;
  }
}

function showApproval(request) {
  const box = add($("approvals"), "div", "approval");
  box.id = `approval-${request.id}`;
  add(box, "div", "", request.summary);
  if (request.reason) add(box, "small", "", request.reason);
  add(box, "br");
  for (const [label, decision] of [["Allow once", "allow_once"], ["Allow for the session", "allow_for_session"], ["Deny", "deny"]]) {
    const button = add(box, "button", "", label);
    button.type = "button";
    button.addEventListener("click", async () => {
      try { await api("POST", `/api/approvals/${request.id}`, { decision }); } catch (err) { add(box, "div", "note", err.message); }
      box.remove();
    });
  }
}

function showQuestion(request) {
  const box = add($("approvals"), "div", "approval");
  box.id = `approval-${request.id}`;
  add(box, "div", "", request.question);
  const send = async (body) => {
    try { await api("POST", `/api/questions/${request.id}`, body); } catch (err) { add(box, "div", "note", err.message); }
    box.remove();
  };
  for (const option of request.options) {
    const button = add(box, "button", "", option);
    button.type = "button";
    button.addEventListener("click", () => send({ text: option }));
  }
  const input = add(box, "input");
  input.placeholder = "Another answer";
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && input.value.trim()) send({ text: input.value.trim() });
  });
  const decline = add(box, "button", "", "Decline");
  decline.type = "button";
  decline.addEventListener("click", () => send({ decline: true }));
}

$("composer").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("prompt").value.trim();
  if (!text) return;
  $("prompt").value = "";
  try {
    if (current && currentLive) {
      add($("transcript"), "div", "user", text);
      await api("POST", `/api/sessions/${current}/prompt`, { text });
    } else if (current) {
      const resumed = await api("POST", "/api/sessions", { resume: current, prompt: text });
      open({ id: resumed.id, live: true });
      add($("transcript"), "div", "user", text);
    } else {
      const started = await api("POST", "/api/sessions", { cwd: defaultCwd, prompt: text });
      open({ id: started.id, live: true });
      add($("transcript"), "div", "user", text);
    }
  } catch (err) {
    add($("transcript"), "div", "note", err.message);
  }
});

$("cancel").addEventListener("click", () => current && api("POST", `/api/sessions/${current}/cancel`, {}));
$("search").addEventListener("input", () => listSessions());

api("GET", "/api/server").then((server) => {
  defaultCwd = server.cwd;
  $("project").textContent = server.cwd;
});
listSessions();
