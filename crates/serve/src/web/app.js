// The page of `codecoder serve`: the session list (search, project filter), one session's live
// transcript from its event stream, the approvals and questions it waits on, and a composer
// with `@file` completion and slash commands.
//
// Invariants: every call goes to this server's own API (same origin, the session cookie);
// model and tool text reaches the page only through `textContent` or through `markdown()` /
// `highlight()`, which escape it before adding their own tags; a call is rendered from its
// `view` (the description its tool wrote), never from the tool's name; the stream is read with
// a cursor (`after`), so a reconnect neither loses nor repeats an event; the transcript follows
// new content while the reader is at its end (`follow`), and never moves when they scrolled up.

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------------------------
// Helpers

function escapeHtml(text) {
  return String(text)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

function add(parent, tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  parent.appendChild(node);
  return node;
}

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const answer = await fetch(path, init);
  const data = await answer.json().catch(() => ({}));
  if (!answer.ok) {
    const error = new Error(data.error || `${answer.status} ${answer.statusText}`);
    error.status = answer.status;
    throw error;
  }
  return data;
}

function shortNumber(n) {
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return String(n);
}

function ago(ms) {
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

function basename(path) {
  const parts = String(path || "").split("/").filter(Boolean);
  return parts.length ? parts[parts.length - 1] : path || "/";
}

// ---------------------------------------------------------------------------------------------
// Syntax highlighting: one small tokenizer for the C family, Rust, Python, shell, JSON and the
// like. It colours comments, strings, numbers and keywords; the text of every token is escaped.

const KEYWORDS = new Set((
  "as async await break case catch class const continue crate def default defer del do dyn elif " +
  "else enum export extends false fn for from func function go if impl import in interface is " +
  "lambda let loop match mod move mut new nil none None null package pass pub raise ref return " +
  "self Self static struct super switch then this throw trait true True False try type typeof " +
  "undefined unsafe use var void where while with yield echo fi done esac local"
).split(" "));

const TOKEN = new RegExp([
  "(\\/\\/[^\\n]*|#(?![\\[!])[^\\n]*|\\/\\*[\\s\\S]*?\\*\\/)", // 1 comment
  "(\"(?:\\\\.|[^\"\\\\\\n])*\"|'(?:\\\\.|[^'\\\\\\n])*'|`(?:\\\\.|[^`\\\\])*`)", // 2 string
  "(\\b\\d[\\d_]*(?:\\.\\d+)?(?:[eE][+-]?\\d+)?\\b|\\b0x[0-9a-fA-F_]+\\b)", // 3 number
  "([A-Za-z_][A-Za-z0-9_]*)", // 4 word
].join("|"), "g");

export function highlight(code, lang) {
  const hashComments = /^(py|python|sh|bash|shell|zsh|toml|yaml|yml|rb|ruby|perl|r|make|makefile|dockerfile)$/i.test(lang || "");
  let out = "";
  let last = 0;
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(code); m; m = TOKEN.exec(code)) {
    out += escapeHtml(code.slice(last, m.index));
    const [token, comment, string, number, word] = m;
    if (comment !== undefined && (comment[0] !== "#" || hashComments)) {
      out += `<span class="hl-comment">${escapeHtml(token)}</span>`;
    } else if (comment !== undefined) {
      out += escapeHtml(token[0]);
      TOKEN.lastIndex = m.index + 1;
      last = m.index + 1;
      continue;
    } else if (string !== undefined) {
      out += `<span class="hl-string">${escapeHtml(token)}</span>`;
    } else if (number !== undefined) {
      out += `<span class="hl-number">${escapeHtml(token)}</span>`;
    } else if (word !== undefined && KEYWORDS.has(word)) {
      out += `<span class="hl-keyword">${escapeHtml(token)}</span>`;
    } else {
      out += escapeHtml(token);
    }
    last = m.index + token.length;
  }
  return out + escapeHtml(code.slice(last));
}

// ---------------------------------------------------------------------------------------------
// Markdown: headings, paragraphs, lists, quotes, rules, tables, fenced code (highlighted), inline
// code, bold, italic and http(s) links. The text is escaped first; only the tags added here are HTML.

function inline(text) {
  const codes = [];
  let html = escapeHtml(text).replace(/`([^`\n]+)`/g, (_, code) => {
    codes.push(code);
    return `\u0000${codes.length - 1}\u0000`;
  });
  html = html
    .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*([^*\n]+)\*(?!\w)/g, "$1<em>$2</em>")
    .replace(/(^|[^_\w])_([^_\n]+)_(?!\w)/g, "$1<em>$2</em>")
    .replace(/\[([^\]\n]+)\]\((https?:\/\/[^)\s"]+)\)/g,
      '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>');
  return html.replace(/\u0000(\d+)\u0000/g, (_, i) => `<code>${codes[Number(i)]}</code>`);
}

// The cells of a table row: `| a | b |` (the outer bars optional; `\|` is a bar in a cell).
function cells(line) {
  return line.trim().replace(/^\|/, "").replace(/(^|[^\\])\|$/, "$1").split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

export function markdown(source) {
  const lines = String(source).replace(/\r\n/g, "\n").split("\n");
  let html = "";
  let paragraph = [];
  let list = null; // "ul" | "ol"
  const flush = () => {
    if (paragraph.length) html += `<p>${paragraph.map(inline).join("<br>")}</p>`;
    paragraph = [];
  };
  const closeList = () => {
    if (list) html += `</${list}>`;
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+#.-]*)/);
    if (fence) {
      flush();
      closeList();
      const code = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) code.push(lines[i]);
      const lang = fence[2] || "";
      html += `<pre class="code"${lang ? ` data-lang="${escapeHtml(lang)}"` : ""}><code>${highlight(code.join("\n"), lang)}</code></pre>`;
      continue;
    }
    if (line.includes("|") && TABLE_RULE.test(lines[i + 1] || "") && cells(lines[i + 1]).length === cells(line).length) {
      flush();
      closeList();
      const row = (cols, tag) => `<tr>${cols.map((c) => `<${tag}>${inline(c)}</${tag}>`).join("")}</tr>`;
      html += `<table><thead>${row(cells(line), "th")}</thead><tbody>`;
      for (i += 2; i < lines.length && lines[i].includes("|") && lines[i].trim(); i++) html += row(cells(lines[i]), "td");
      html += "</tbody></table>";
      i--;
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    const bullet = line.match(/^\s*[-*+]\s+(.*)$/);
    const numbered = line.match(/^\s*\d+[.)]\s+(.*)$/);
    const quote = line.match(/^\s*>\s?(.*)$/);
    if (heading) {
      flush();
      closeList();
      const level = Math.min(heading[1].length + 2, 6);
      html += `<h${level}>${inline(heading[2])}</h${level}>`;
    } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      closeList();
      html += "<hr>";
    } else if (bullet || numbered) {
      flush();
      const kind = bullet ? "ul" : "ol";
      if (list !== kind) {
        closeList();
        html += `<${kind}>`;
        list = kind;
      }
      const item = (bullet || numbered)[1];
      const task = item.match(/^\[([ xX])\]\s+(.*)$/);
      html += task
        ? `<li class="task">${task[1] === " " ? "☐" : "☑"} ${inline(task[2])}</li>`
        : `<li>${inline(item)}</li>`;
    } else if (quote) {
      flush();
      closeList();
      html += `<blockquote>${inline(quote[1])}</blockquote>`;
    } else if (!line.trim()) {
      flush();
      closeList();
    } else {
      closeList();
      paragraph.push(line);
    }
  }
  flush();
  closeList();
  return html;
}

function setMarkdown(node, source) {
  node.innerHTML = markdown(source); // escaped inside markdown()
}

// ---------------------------------------------------------------------------------------------
// State

const state = {
  serverCwd: null,
  projects: [],
  project: "", // the filter; "" is every project
  current: null, // the open session's id
  live: false,
  stream: null,
  lastSeq: 0,
  running: false,
  reconnectTimer: null,
  // Per open session:
  cards: new Map(), // call id -> card
  asks: new Map(), // request id -> prompt box
  decisions: new Map(), // call id -> how its approval was answered
  texts: new Map(), // "turn/step" -> {node, text}
  reasoning: new Map(), // "turn/step" -> {node, text}
  turnBoxes: new Map(), // turn -> container node
  userByTurn: new Map(), // turn -> input text, from the history
  sentPrompts: [], // prompts this page sent that have no turn yet
  sentSteers: [], // steering this page sent, not yet seen in the stream
  streamPrompts: [], // prompts the stream told of, for the next turns
  runningTurn: null, // the turn the stream is in
  firstStreamTurn: null,
  contextWindow: null,
  lastInput: 0,
  commands: null,
  features: { files: true, commands: true, mode: true },
  follow: true, // the reader is at the transcript's end: new content keeps them there
};

function resetSession() {
  if (state.stream) state.stream.close();
  clearTimeout(state.reconnectTimer);
  Object.assign(state, {
    stream: null, lastSeq: 0, running: false, firstStreamTurn: null, contextWindow: null, buffer: null,
    lastInput: 0, commands: null, sentPrompts: [], sentSteers: [], streamPrompts: [], runningTurn: null,
  });
  for (const map of [state.cards, state.asks, state.decisions, state.texts, state.reasoning, state.turnBoxes, state.userByTurn]) map.clear();
  $("transcript").replaceChildren();
  $("prompts").replaceChildren();
  $("session-head").replaceChildren();
  $("usage").textContent = "";
  setStatus("");
  follow(true);
}

function setStatus(text) {
  $("status").textContent = text;
  $("status").className = `status ${text ? "busy" : ""}`;
}

function setRunning(running) {
  state.running = running;
  $("cancel").hidden = !running;
  $("steer").hidden = !running;
  if (!running) setStatus("");
}

function updateComposer() {
  const send = $("send");
  if (!state.current) send.textContent = "Start a session";
  else if (state.live) send.textContent = "Send";
  else send.textContent = "Resume with this";
  $("prompt").placeholder = state.current
    ? "Message (@ for a file, / for a command)"
    : `New session in ${state.project || state.serverCwd || "this project"} (@ for a file, / for a command)`;
}

// ---------------------------------------------------------------------------------------------
// Sessions and projects

async function loadProjects() {
  const select = $("project-filter");
  let projects;
  try {
    ({ projects } = await api("GET", "/api/projects"));
  } catch {
    // Without the route, the projects are the server's own and those of the listed sessions.
    const { sessions } = await api("GET", "/api/sessions").catch(() => ({ sessions: [] }));
    const seen = new Set([state.serverCwd]);
    projects = [{ cwd: state.serverCwd }];
    for (const s of sessions) if (!seen.has(s.cwd)) { seen.add(s.cwd); projects.push({ cwd: s.cwd }); }
  }
  state.projects = projects;
  select.replaceChildren();
  const all = add(select, "option", "", "All projects");
  all.value = "";
  for (const p of projects) {
    const option = add(select, "option", "", `${basename(p.cwd)}${p.sessions !== undefined ? ` (${p.sessions})` : ""}`);
    option.value = p.cwd;
    option.title = p.cwd;
  }
  const other = add(select, "option", "", "Another directory…");
  other.value = "\u0000other";
  select.value = state.project;
}

let listTimer = null;
function scheduleList() {
  clearTimeout(listTimer);
  listTimer = setTimeout(listSessions, 150);
}

async function listSessions() {
  const q = encodeURIComponent($("search").value.trim());
  const cwd = encodeURIComponent(state.project);
  let sessions;
  try {
    ({ sessions } = await api("GET", `/api/sessions?q=${q}&cwd=${cwd}`));
  } catch (err) {
    note(err.message);
    return;
  }
  const list = $("sessions");
  list.replaceChildren();
  if (!sessions.length) add(list, "li", "empty", $("search").value ? "No session matches." : "No sessions yet.");
  for (const s of sessions) {
    const item = add(list, "li", s.id === state.current ? "current" : "");
    item.dataset.id = s.id;
    item.tabIndex = 0;
    const title = add(item, "span", "title", s.title || "(no prompt yet)");
    if (s.live) add(title, "span", "live-dot", "●").title = "hosted by this server";
    add(item, "small", "", `${basename(s.cwd)} · ${ago(s.updatedMs)}`).title = s.cwd;
    const choose = () => openSession(s.id, s.live);
    item.addEventListener("click", choose);
    item.addEventListener("keydown", (e) => { if (e.key === "Enter") choose(); });
  }
}

function newSession() {
  resetSession();
  state.current = null;
  state.live = false;
  history.replaceState(null, "", location.pathname);
  updateComposer();
  showHead();
  for (const li of $("sessions").children) li.classList.remove("current");
  $("prompt").focus();
}

function showHead(info) {
  const head = $("session-head");
  head.replaceChildren();
  if (!state.current) {
    add(head, "span", "new", `New session in ${state.project || state.serverCwd || ""}`);
    return;
  }
  add(head, "span", "where", info?.cwd || "").title = info?.cwd || "";
  if (info?.model) add(head, "span", "model", info.model);
  if (info?.permissionMode) add(head, "span", "mode", info.permissionMode);
  if (!state.live) add(head, "span", "note", "not running here: its history, from the log");
}

async function openSession(id, live, sentPrompt) {
  resetSession();
  if (sentPrompt) state.sentPrompts.push(sentPrompt);
  state.current = id;
  state.live = live;
  history.replaceState(null, "", `#session=${encodeURIComponent(id)}`);
  for (const li of $("sessions").children) li.classList.toggle("current", li.dataset.id === id);
  updateComposer();
  document.body.classList.add("reading");
  let info = null;
  try {
    info = await api("GET", `/api/sessions/${id}`);
    if (typeof info.live === "boolean" && info.live !== live) {
      live = info.live;
      state.live = live;
      updateComposer();
    }
    state.contextWindow = info.contextWindow ?? null;
    if (info.permissionMode) $("plan-mode").checked = info.permissionMode === "plan";
  } catch {
    // Without the route the session's facts come from the history alone.
  }
  // The log's history gives the turns before this server hosted the session, and the person's
  // input of every turn (the live stream carries the agent's events only).
  let replay = null;
  try {
    replay = await api("GET", `/api/sessions/${id}/history`);
  } catch (err) {
    if (!live) note(err.message);
  }
  if (state.current !== id) return;
  showHead({ cwd: replay?.cwd, ...(info || {}) });
  if (replay) {
    rememberInputs(replay.events);
    for (const record of replay.events) show(record, true);
  }
  if (live) {
    connect();
    refreshPending();
  }
}

function rememberInputs(records) {
  let turn = null;
  for (const record of records) {
    const kind = record.event?.kind;
    if (kind?.type === "turn_started") turn = kind.turn;
    if (record.user && turn !== null && !state.userByTurn.has(turn)) state.userByTurn.set(turn, inputText(record.user));
  }
}

// What the person typed: the input's text items, without the context hooks added to it.
function inputText(input) {
  return (input.content || [])
    .filter((c) => c.type === "text" && !c.text.startsWith("<hook-context>"))
    .map((c) => c.text)
    .join("\n");
}

// ---------------------------------------------------------------------------------------------
// The live stream

function connect() {
  const id = state.current;
  if (state.stream) state.stream.close();
  const source = new EventSource(`/api/sessions/${id}/events?after=${state.lastSeq}`);
  state.stream = source;
  source.onopen = () => document.body.classList.remove("offline");
  source.onmessage = (message) => {
    if (state.current !== id) return;
    let record;
    try { record = JSON.parse(message.data); } catch { return; }
    if (typeof record.seq === "number") {
      if (record.seq <= state.lastSeq) return;
      state.lastSeq = record.seq;
    }
    if (record.gap) {
      recoverFromGap(id, record.gap);
      return;
    }
    if (state.buffer) state.buffer.push(record);
    else show(record, false);
  };
  source.onerror = () => {
    if (state.current !== id) return;
    document.body.classList.add("offline");
    // EventSource retries by itself (with Last-Event-ID) unless the answer was an error; then
    // the page retries with its own cursor once it knows the session is still hosted.
    if (source.readyState !== EventSource.CLOSED) return;
    clearTimeout(state.reconnectTimer);
    state.reconnectTimer = setTimeout(async () => {
      try {
        await api("GET", `/api/sessions/${id}/pending`);
      } catch (err) {
        if (err.status === 404) {
          state.live = false;
          setRunning(false);
          updateComposer();
          document.body.classList.remove("offline");
          return;
        }
      }
      if (state.current === id) connect();
    }, 1000);
  };
}

// The server no longer keeps the events the gap names: the transcript is drawn again from the
// log's history, and the stream goes on after the gap, its events merged into the history's
// turns (the calls by their id; text already logged is not added twice).
async function recoverFromGap(id, gap) {
  state.lastSeq = Math.max(state.lastSeq, gap.to);
  state.buffer = [];
  const shown = [...state.asks.values()];
  let replay = null;
  let pending = null;
  try {
    [replay, pending] = await Promise.all([api("GET", `/api/sessions/${id}/history`), api("GET", `/api/sessions/${id}/pending`).catch(() => null)]);
  } catch (err) {
    note(err.message);
  }
  if (state.current !== id) return;
  // A request shown before the gap and no longer pending was answered in it: it goes quietly.
  if (pending) {
    const ids = new Set([...pending.approvals, ...pending.questions].map((r) => r.event?.kind?.id));
    for (const box of shown) if (!ids.has(box.askId)) box.settle("");
  }
  $("transcript").replaceChildren();
  for (const map of [state.cards, state.texts, state.reasoning, state.turnBoxes]) map.clear();
  state.firstStreamTurn = "gap";
  if (replay) {
    rememberInputs(replay.events);
    for (const record of replay.events) show(record, true);
  }
  const buffered = state.buffer;
  state.buffer = null;
  for (const record of buffered) show(record, false);
  refreshPending();
}

// A turn ended: the requests it made that are still shown were withdrawn. A request of this
// turn goes now; one whose turn is not known (a subagent's) goes if the server no longer has
// it pending. A later turn's request stays (a reloaded page's stream replays earlier turns'
// ends while it is pending).
async function settleEnded(turn) {
  const unknown = [];
  for (const box of [...state.asks.values()]) {
    if (box.turn === turn) box.settle("withdrawn: the turn ended");
    else if (box.turn === undefined) unknown.push(box);
  }
  if (!unknown.length) return;
  const id = state.current;
  try {
    const { approvals, questions } = await api("GET", `/api/sessions/${id}/pending`);
    const pending = new Set([...approvals, ...questions].map((r) => r.event?.kind?.id));
    if (state.current !== id) return;
    for (const box of unknown) if (box.isConnected && !pending.has(box.askId)) box.settle("withdrawn: the turn ended");
  } catch {
    // The boxes stay until the stream resolves them.
  }
}

async function refreshPending() {
  const id = state.current;
  try {
    const { approvals, questions } = await api("GET", `/api/sessions/${id}/pending`);
    if (state.current !== id) return;
    for (const record of [...approvals, ...questions]) {
      const kind = record.event?.kind;
      if (kind && !state.asks.has(kind.id)) show(record, false);
    }
  } catch {
    // Nothing pending to show.
  }
}

// ---------------------------------------------------------------------------------------------
// Rendering records

function turnBox(turn, fromHistory) {
  if (turn === undefined || turn === null) return $("transcript");
  let box = state.turnBoxes.get(turn);
  if (!box) {
    box = add($("transcript"), "div", "turn");
    box.dataset.turn = turn;
    box.dataset.from = fromHistory ? "history" : "stream";
    state.turnBoxes.set(turn, box);
  }
  return box;
}

function note(text, parent) {
  return add(parent || $("transcript"), "div", "note", text);
}

// The transcript stays at its end while the reader is there: content added (a streamed reply, a
// session opened) or the transcript made shorter (an approval box opening below it) scrolls it
// down. Scrolled up, it stays put and a button offers the new content.
function follow(on) {
  state.follow = on;
  $("to-end").hidden = true;
  if (on) $("transcript").scrollTop = $("transcript").scrollHeight;
}

function contentChanged() {
  if (state.follow) follow(true);
  else $("to-end").hidden = false;
}

// One record of the live stream (`fromHistory` false) or of the replayed log, rendered.
function show(record, fromHistory) {
  const resolved = record.approvalResolved || record.questionResolved;
  if (resolved) {
    resolveAsk(resolved.id, record.approvalResolved ? describeDecision(resolved.decision) : describeAnswer(resolved.answer));
    return;
  }
  if (record.user) {
    // The history's input is shown with its turn (see `rememberInputs`). The stream tells of
    // each prompt (`{input, steer}`, whichever client sent it) before what it starts: one sent
    // while no turn runs names the next turn (shown with its `turn_started`); one sent during
    // a turn joins that turn at its next step, and is shown there now, as is steering.
    const input = record.user.input;
    if (fromHistory || !input) return;
    const text = inputText(input);
    const sent = state.sentPrompts.indexOf(text);
    if (sent >= 0) state.sentPrompts.splice(sent, 1);
    if (record.user.steer) {
      const own = state.sentSteers.indexOf(text);
      if (own >= 0) state.sentSteers.splice(own, 1);
      else note(`Steered: ${text}`, turnBox(state.runningTurn)).classList.add("steer");
    } else if (state.running && state.runningTurn !== null) {
      userBubble(turnBox(state.runningTurn, false), text);
    } else {
      state.streamPrompts.push(text);
    }
    return;
  }
  if (record.approval) {
    if (record.approval.decidedBy !== "mode") {
      state.decisions.set(record.approval.callId, `${describeDecision(record.approval.decision)} (${record.approval.decidedBy})`);
    }
    return;
  }
  const event = record.event;
  if (!event) return;
  const kind = event.kind;
  // A subagent's own steps are its business; only what it asks of the person is shown.
  const fromSubagent = (event.source?.subagentPath || []).length > 0;
  if (fromSubagent && kind.type !== "approval_request" && kind.type !== "ask_user") return;
  if (!fromHistory && kind.turn !== undefined && state.firstStreamTurn === null) {
    // The stream repeats every turn since this server hosted the session: the history's copy
    // of those turns goes.
    state.firstStreamTurn = kind.turn;
    for (const [turn, box] of state.turnBoxes) {
      if (turn >= kind.turn && box.dataset.from === "history") {
        box.remove();
        state.turnBoxes.delete(turn);
      }
    }
    for (const map of [state.cards, state.texts, state.reasoning]) {
      for (const [key, entry] of map) if (!entry.node.isConnected) map.delete(key);
    }
  }
  const key = `${kind.turn}/${kind.step}`;
  switch (kind.type) {
    case "turn_started": {
      const box = turnBox(kind.turn, fromHistory);
      let text = state.userByTurn.get(kind.turn);
      if (!fromHistory) {
        // The stream's own word on the prompt first; this page's record of what it sent for a
        // server whose stream does not carry prompts.
        const streamed = state.streamPrompts.shift();
        if (text === undefined) text = streamed;
        if (text !== undefined && state.sentPrompts[0] === text) state.sentPrompts.shift();
        if (text === undefined && state.sentPrompts.length) text = state.sentPrompts.shift();
        state.runningTurn = kind.turn;
      }
      if (text === undefined && !fromHistory) lookUpInput(kind.turn);
      if (text && !box.querySelector(".user")) userBubble(box, text, kind.turn);
      if (!fromHistory) {
        setRunning(true);
        setStatus("working");
        scheduleList();
      }
      break;
    }
    case "reasoning_delta": {
      let entry = state.reasoning.get(key);
      if (entry?.fromHistory && !fromHistory) break;
      if (!entry) {
        const details = add(turnBox(kind.turn, fromHistory), "details", "reasoning");
        add(details, "summary", "", "Reasoning");
        entry = { node: add(details, "div", "reasoning-text"), text: "", fromHistory };
        state.reasoning.set(key, entry);
      }
      entry.text += kind.delta;
      entry.node.textContent = entry.text;
      break;
    }
    case "text_delta": {
      const entry = agentText(key, kind.turn, fromHistory);
      if (entry.fromHistory && !fromHistory) break;
      entry.text += kind.delta;
      renderSoon(entry);
      break;
    }
    case "agent_message": {
      const entry = agentText(key, kind.turn, fromHistory);
      entry.text = kind.text;
      renderSoon(entry);
      break;
    }
    case "step_retried": {
      const entry = state.texts.get(key);
      if (entry) { entry.text = ""; renderSoon(entry); }
      note(`retrying: ${kind.reason}`, turnBox(kind.turn, fromHistory));
      break;
    }
    case "call_progress":
      toolCard(kind.call_id, kind.turn, fromHistory).update(kind.view, null);
      break;
    case "tool_started":
      toolCard(kind.call.id, kind.turn, fromHistory).update(kind.view, kind.call);
      break;
    case "tool_output_delta":
      state.cards.get(kind.call_id)?.output(kind.chunk, kind.stream);
      break;
    case "tool_finished": {
      const card = toolCard(kind.call_id, kind.turn, fromHistory);
      card.update(kind.view, kind.call);
      card.finish(kind.result, kind.mcp_result);
      break;
    }
    case "approval_request":
      if (!fromHistory) showApproval(kind, fromSubagent);
      break;
    case "ask_user":
      if (!fromHistory) showQuestion(kind, fromSubagent);
      break;
    case "compacted":
      note(kind.message, turnBox(kind.turn, fromHistory));
      break;
    case "step_finished":
      if (kind.usage && kind.usage.inputTokens) state.lastInput = kind.usage.inputTokens;
      showUsage(null);
      break;
    case "usage":
      showUsage(kind.turn_total);
      break;
    case "warning":
      note(kind.message, turnBox(null));
      break;
    case "hook_message":
      note(`${kind.event}: ${kind.message}`, turnBox(null));
      break;
    case "status": {
      if (fromHistory) break;
      const status = Object.keys(kind).find((k) => k !== "type");
      const words = { thinking: "thinking…", running_tools: "running tools…", waiting_for_user: "waiting for you", idle: "" };
      setStatus(words[status] ?? "");
      break;
    }
    case "turn_done": {
      if (!fromHistory) {
        setRunning(false);
        settleEnded(kind.turn);
      }
      const box = turnBox(kind.turn, fromHistory);
      if (kind.outcome?.type === "failed") note(`The turn failed: ${kind.outcome.message}`, box).classList.add("error");
      else if (kind.cancelled || kind.outcome?.type === "cancelled") note("Cancelled.", box);
      else if (kind.outcome?.type === "interrupted") note("Interrupted (the process stopped).", box);
      if (kind.usage) showUsage(kind.usage);
      if (!fromHistory) {
        scheduleList();
        refreshInfo();
        loadProjects(); // the counts of sessions per project
      }
      break;
    }
    case "shutdown_complete":
      if (!fromHistory) {
        state.live = false;
        setRunning(false);
        updateComposer();
      }
      break;
    default:
      break;
  }
}

// The session's facts after a turn (its permission mode may have changed: a plan approved).
async function refreshInfo() {
  const id = state.current;
  try {
    const info = await api("GET", `/api/sessions/${id}`);
    if (state.current !== id) return;
    if (info.contextWindow) state.contextWindow = info.contextWindow;
    if (info.permissionMode) $("plan-mode").checked = info.permissionMode === "plan";
    showHead(info);
    showUsage(null);
  } catch {
    // The facts shown stay as they were.
  }
}

async function lookUpInput(turn) {
  const id = state.current;
  try {
    const replay = await api("GET", `/api/sessions/${id}/history`);
    if (state.current !== id) return;
    rememberInputs(replay.events);
    const text = state.userByTurn.get(turn);
    const box = state.turnBoxes.get(turn);
    if (box && text && !box.querySelector(".user")) box.prepend(userBubble(box, text, turn));
  } catch {
    // The bubble stays empty.
  }
}

function userBubble(box, text, turn) {
  const bubble = add(box, "div", "user", text);
  if (turn !== undefined) bubble.dataset.turn = turn;
  return bubble;
}

function agentText(key, turn, fromHistory) {
  let entry = state.texts.get(key);
  if (!entry) {
    entry = { node: add(turnBox(turn, fromHistory), "div", "agent markdown"), text: "", pending: false, fromHistory };
    state.texts.set(key, entry);
  }
  return entry;
}

function renderSoon(entry) {
  if (entry.pending) return;
  entry.pending = true;
  requestAnimationFrame(() => {
    entry.pending = false;
    setMarkdown(entry.node, entry.text);
  });
}

function showUsage(total) {
  if (total) state.turnUsage = total;
  const parts = [];
  const usage = state.turnUsage;
  if (usage) parts.push(`${shortNumber(usage.inputTokens)} in · ${shortNumber(usage.outputTokens)} out`);
  if (state.contextWindow && state.lastInput) {
    const share = Math.round((100 * state.lastInput) / state.contextWindow);
    parts.push(`context ${shortNumber(state.lastInput)}/${shortNumber(state.contextWindow)} (${share}%)`);
  } else if (state.lastInput) {
    parts.push(`context ${shortNumber(state.lastInput)}`);
  }
  $("usage").textContent = parts.join(" · ");
}

// ---------------------------------------------------------------------------------------------
// Tool cards, from the call's view

function resultText(result) {
  if (!result) return "";
  if (result.Ok) return (result.Ok.content || []).map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
  if (result.Err) return describeToolError(result.Err);
  return "";
}

function describeToolError(err) {
  switch (err.type) {
    case "unknown_tool": return `unknown tool \`${err.name}\``;
    case "invalid_arguments": return `invalid arguments: ${err.message}`;
    case "permission_denied": return `permission denied: ${err.reason}`;
    case "timed_out": return `timed out after ${err.limit_ms} ms`;
    case "cancelled": return "cancelled";
    default: return err.message || err.type;
  }
}

function renderDiff(parent, change) {
  const box = add(parent, "div", "change");
  const what = change.kind?.type === "add" ? "new file" : change.kind?.type === "delete" ? "deleted" : change.kind?.move_to ? `moved to ${change.kind.move_to}` : "";
  const head = add(box, "div", "change-path", change.path);
  if (what) add(head, "span", "change-kind", what);
  const pre = add(box, "pre", "diff");
  for (const line of String(change.diff || "").split("\n")) {
    if (line === "") continue;
    const cls = line.startsWith("@@") ? "hunk" : line[0] === "+" ? "add" : line[0] === "-" ? "del" : "ctx";
    add(pre, "span", `diff-${cls}`, `${line}\n`);
  }
  return box;
}

function renderView(parent, view, call) {
  const kind = view.kind?.type || "other";
  if (view.command) {
    const pre = add(parent, "pre", "command");
    pre.innerHTML = `<span class="prompt-sign">$ </span>${highlight(view.command, "sh")}`;
  }
  for (const change of view.changes || []) renderDiff(parent, change);
  if (view.plan) {
    // A plan under review (an `ask`) shows its whole text in the review; an update shows why.
    if (view.plan.explanation && kind === "plan") setMarkdown(add(parent, "div", "markdown plan-explanation"), view.plan.explanation);
    const list = add(parent, "ul", "plan-steps");
    for (const step of view.plan.steps) add(list, "li", `plan-${step.status}`, step.text);
  }
  if (kind === "mcp") {
    add(parent, "div", "mcp-tool", `${view.kind.server} › ${view.kind.tool}`);
    if (call?.args && Object.keys(call.args).length) add(parent, "pre", "args", JSON.stringify(call.args, null, 2));
  } else if (!view.command && !(view.changes || []).length && !view.plan) {
    const where = view.paths?.length ? view.paths.join(", ") + (view.line ? `:${view.line}` : "") : view.detail;
    if (where) add(parent, "div", "detail", where);
  }
}

const ICONS = { read: "📄", edit: "✏️", search: "🔎", execute: "▶", fetch: "🌐", plan: "☰", ask: "?", agent: "🤖", mcp: "🔌", other: "•" };

function toolCard(callId, turn, fromHistory) {
  let card = state.cards.get(callId);
  if (card) return card;
  const node = add(turnBox(turn, fromHistory), "details", "tool running");
  node.dataset.call = callId;
  const summary = add(node, "summary");
  const icon = add(summary, "span", "icon");
  const title = add(summary, "span", "title");
  const badge = add(summary, "span", "badge", "running");
  const body = add(node, "div", "tool-body");
  const viewBox = add(body, "div", "view");
  let output = null;
  let streamed = false;
  card = {
    node,
    update(view, call) {
      if (!view) return;
      const kind = view.kind?.type || "other";
      node.dataset.kind = kind;
      icon.textContent = ICONS[kind] || "•";
      title.textContent = view.title || call?.name || "call";
      viewBox.replaceChildren();
      renderView(viewBox, view, call);
      // Edits and commands are what a reader wants to see without a click.
      if (kind === "edit" || kind === "execute") node.open = true;
    },
    output(chunk, stream) {
      if (!output) output = add(body, "pre", "output");
      streamed = true;
      add(output, "span", stream === "stderr" ? "stderr" : "", chunk);
    },
    badge(text) { badge.textContent = text; },
    decided(text) {
      let line = body.querySelector(".decision");
      if (!line) line = body.insertBefore(document.createElement("div"), body.firstChild);
      line.className = "decision";
      line.textContent = text;
    },
    finish(result, mcpResult) {
      node.classList.remove("running");
      const failed = !result || result.Err !== undefined || result.Ok?.status === "error";
      const cancelled = result?.Err?.type === "cancelled" || result?.Ok?.status === "cancelled";
      node.classList.add(cancelled ? "cancelled" : failed ? "failed" : "done");
      const exit = result?.Ok?.exit;
      if (exit) badge.textContent = exit.code !== undefined && exit.code !== null ? `exit ${exit.code} · ${(exit.durationMs / 1000).toFixed(1)} s` : exit.signal ? `signal ${exit.signal}` : "stopped";
      else badge.textContent = cancelled ? "cancelled" : failed ? "failed" : "done";
      let text = resultText(result);
      if (mcpResult?.structuredContent && !text) text = JSON.stringify(mcpResult.structuredContent, null, 2);
      if (streamed && result?.Ok) return; // the output is already shown, as it came
      if (!text) return;
      if (!output) output = add(body, "pre", "output");
      else output.replaceChildren();
      const lines = text.split("\n");
      const shown = lines.length > 400 ? `${lines.slice(0, 400).join("\n")}\n… ${lines.length - 400} more lines` : text;
      add(output, "span", failed ? "stderr" : "", shown);
    },
  };
  state.cards.set(callId, card);
  const decided = state.decisions.get(callId);
  if (decided) card.decided(decided);
  return card;
}

// ---------------------------------------------------------------------------------------------
// Approvals, questions, plan review

function describeDecision(decision) {
  const type = typeof decision === "string" ? decision : decision?.type;
  return { allow_once: "allowed once", allow_for_session: "allowed for the session", deny: "denied", deny_with_feedback: "denied with feedback", cancelled: "withdrawn" }[type] || String(type);
}

function describeAnswer(answer) {
  if (!answer) return "answered";
  if (answer.type === "answer") return `answered: ${answer.text}`;
  if (answer.type === "declined") return "declined";
  return "answered";
}

function askBox(id, className, request, fromSubagent) {
  const box = add($("prompts"), "div", `ask ${className}`);
  box.id = `ask-${id}`;
  box.askId = id;
  if (!fromSubagent && typeof request.turn === "number") box.turn = request.turn;
  box.shownAt = Date.now();
  box.settle = (text) => {
    state.asks.delete(id);
    box.remove();
    if (text) note(text);
  };
  state.asks.set(id, box);
  return box;
}

function resolveAsk(id, how) {
  const box = state.asks.get(id);
  if (!box) return;
  // A tool card exists only once the call runs: the decision is shown on it then.
  // A request answered while the page was catching up was not seen here: no "elsewhere" then.
  const seen = Date.now() - box.shownAt > 1000;
  const told = box.dataset.answeredHere || !seen ? how : `${how} (by another client)`;
  state.decisions.set(box.dataset.call, told);
  state.cards.get(box.dataset.call)?.decided(told);
  box.settle("");
}

async function answer(box, path, body) {
  for (const button of box.querySelectorAll("button")) button.disabled = true;
  box.dataset.answeredHere = "1";
  try {
    await api("POST", path, body);
  } catch (err) {
    // 409: another client answered first; its answer arrives in the stream.
    delete box.dataset.answeredHere;
    if (err.status !== 409) for (const button of box.querySelectorAll("button")) button.disabled = false;
    add(box, "div", "note", err.status === 409 ? "Someone else answered first." : err.message);
  }
}

function showApproval(request, fromSubagent) {
  if (state.asks.has(request.id)) return;
  const box = askBox(request.id, "approval", request, fromSubagent);
  box.dataset.call = request.call?.id || "";
  add(box, "div", "ask-title", `${fromSubagent ? "A subagent asks: " : ""}Allow ${request.summary}?`);
  const view = add(box, "div", "view");
  renderView(view, request.view || {}, request.call);
  add(box, "div", "reason", request.reason ? `Why you are asked: ${request.reason}` : "Why you are asked: the approval policy asks for this kind of call.");
  if (request.permissionKeys?.length) add(box, "div", "keys", `“Allow for the session” covers: ${request.permissionKeys.join(", ")}`);
  const row = add(box, "div", "buttons");
  const path = `/api/approvals/${request.id}`;
  for (const [label, decision, cls] of [["Allow once", "allow_once", "primary"], ["Allow for the session", "allow_for_session", ""], ["Deny", "deny", "danger"]]) {
    const button = add(row, "button", cls, label);
    button.type = "button";
    button.dataset.decision = decision;
    button.addEventListener("click", () => answer(box, path, { decision }));
  }
  const feedback = add(box, "input", "feedback");
  feedback.placeholder = "Deny, and tell the agent why…";
  feedback.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && feedback.value.trim()) {
      e.preventDefault();
      answer(box, path, { decision: { type: "deny_with_feedback", feedback: feedback.value.trim() } });
    }
  });
  const card = state.cards.get(request.call?.id);
  if (card) card.badge("waiting for approval");
}

function isPlanReview(request) {
  const opts = request.options || [];
  return opts.includes("Approve") && opts.includes("Keep planning");
}

function showQuestion(request, fromSubagent) {
  if (state.asks.has(request.id)) return;
  const plan = isPlanReview(request);
  const box = askBox(request.id, plan ? "plan-review" : "question", request, fromSubagent);
  box.dataset.call = request.call_id || request.callId || "";
  const path = `/api/questions/${request.id}`;
  const send = (body) => answer(box, path, body);
  if (plan) {
    add(box, "div", "ask-title", `${fromSubagent ? "A subagent's plan" : "The plan"}: approve it, or keep planning`);
    setMarkdown(add(box, "div", "markdown plan"), request.question);
    const row = add(box, "div", "buttons");
    const approve = add(row, "button", "primary", "Approve");
    approve.type = "button";
    approve.addEventListener("click", () => send({ text: "Approve" }));
    const feedback = add(box, "textarea", "feedback");
    feedback.rows = 2;
    feedback.placeholder = "What should change? (sent with “Keep planning”)";
    const keep = add(row, "button", "", "Keep planning");
    keep.type = "button";
    keep.addEventListener("click", () => send({ text: feedback.value.trim() || "Keep planning" }));
    return;
  }
  add(box, "div", "ask-title", fromSubagent ? "A subagent asks:" : "The agent asks:");
  setMarkdown(add(box, "div", "markdown"), request.question);
  const row = add(box, "div", "buttons");
  for (const option of request.options || []) {
    const button = add(row, "button", "", option);
    button.type = "button";
    button.addEventListener("click", () => send({ text: option }));
  }
  const input = add(box, "input", "feedback");
  input.placeholder = "Your answer…";
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && input.value.trim()) { e.preventDefault(); send({ text: input.value.trim() }); }
  });
  const decline = add(row, "button", "danger", "Decline");
  decline.type = "button";
  decline.addEventListener("click", () => send({ decline: true }));
}

// ---------------------------------------------------------------------------------------------
// Composer: send, steer, cancel, `@file` completion, slash commands

async function submit(steer) {
  const input = $("prompt");
  const text = input.value.trim();
  if (!text) return;
  hideCompletions();
  input.value = "";
  follow(true);
  try {
    if (state.current && state.live) {
      if (steer) {
        state.sentSteers.push(text);
        await api("POST", `/api/sessions/${state.current}/steer`, { text });
        note(`Steered: ${text}`, turnBox(state.runningTurn)).classList.add("steer");
      } else {
        state.sentPrompts.push(text);
        let answer;
        try {
          answer = await api("POST", `/api/sessions/${state.current}/prompt`, { text });
        } catch (err) {
          state.sentPrompts.splice(state.sentPrompts.indexOf(text), 1);
          throw err;
        }
        if (answer.command) commandRan(text, answer);
      }
    } else {
      const body = state.current ? { resume: state.current, prompt: text } : { cwd: state.project || state.serverCwd, prompt: text };
      if (!state.current && $("plan-mode").checked && state.features.mode) body.permissionMode = "plan";
      let started;
      try {
        started = await api("POST", "/api/sessions", body);
      } catch (err) {
        // A server without per-session modes refuses the field: start without it.
        if (err.status !== 400 || !body.permissionMode) throw err;
        state.features.mode = false;
        delete body.permissionMode;
        started = await api("POST", "/api/sessions", body);
      }
      await openSession(started.id, true, text);
      scheduleList();
    }
  } catch (err) {
    input.value = text;
    note(err.message).classList.add("error");
  }
}

// A built-in slash command the server ran at once (no turn of its own): said in the transcript.
// After an undo or a rewind the turns taken back stay on the page, marked by the note; the
// log's history (a reload of a session not hosted here) leaves them out.
function commandRan(text, ran) {
  const at = state.sentPrompts.indexOf(text);
  if (at >= 0) state.sentPrompts.splice(at, 1);
  if (ran.permissionMode) $("plan-mode").checked = ran.permissionMode === "plan";
  const what = ran.rewound ? "the conversation and files were taken back" : ran.permissionMode ? `${ran.permissionMode} mode` : "done";
  note(`/${ran.command}: ${what}.`, turnBox(null)).classList.add("steer");
}

const completion = { items: [], index: 0, start: 0, kind: null, timer: null };

function hideCompletions() {
  $("completions").hidden = true;
  completion.items = [];
}

function showCompletions(items, start, kind) {
  const box = $("completions");
  completion.items = items;
  completion.index = 0;
  completion.start = start;
  completion.kind = kind;
  box.replaceChildren();
  if (!items.length) { box.hidden = true; return; }
  items.forEach((item, i) => {
    const row = add(box, "div", i === 0 ? "item selected" : "item");
    row.setAttribute("role", "option");
    add(row, "span", "name", item.label);
    if (item.description) add(row, "small", "", item.description);
    row.addEventListener("mousedown", (e) => { e.preventDefault(); completion.index = i; applyCompletion(); });
  });
  box.hidden = false;
}

function applyCompletion() {
  const item = completion.items[completion.index];
  if (!item) return;
  const input = $("prompt");
  const caret = input.selectionStart;
  const before = input.value.slice(0, completion.start);
  const after = input.value.slice(caret);
  input.value = `${before}${item.insert} ${after}`;
  const at = before.length + item.insert.length + 1;
  input.setSelectionRange(at, at);
  hideCompletions();
  input.focus();
}

async function commandsOf(id) {
  if (state.commands) return state.commands;
  const { commands } = await api("GET", `/api/sessions/${id}/commands`);
  state.commands = commands;
  return commands;
}

function onPromptInput() {
  const input = $("prompt");
  const caret = input.selectionStart;
  const upto = input.value.slice(0, caret);
  clearTimeout(completion.timer);
  const id = state.current;
  const slash = upto.match(/^\/([\w:-]*)$/);
  const at = upto.match(/(^|\s)@([^\s@]*)$/);
  if (!id || (!slash && !at)) { hideCompletions(); return; }
  completion.timer = setTimeout(async () => {
    try {
      if (slash && state.features.commands) {
        const all = await commandsOf(id);
        const word = slash[1].toLowerCase();
        const items = all.filter((c) => c.name.toLowerCase().startsWith(word)).slice(0, 20)
          .map((c) => ({ label: `/${c.name}`, insert: `/${c.name}`, description: c.description }));
        showCompletions(items, 0, "command");
      } else if (at && state.features.files) {
        const { files } = await api("GET", `/api/sessions/${id}/files?q=${encodeURIComponent(at[2])}`);
        const items = files.slice(0, 20).map((f) => ({ label: f, insert: `@${f}` }));
        showCompletions(items, caret - at[2].length - 1, "file");
      }
    } catch (err) {
      // A server without these routes: no completion (404/405), nothing else changes.
      if (err.status === 404 || err.status === 405) {
        if (slash) state.features.commands = false; else state.features.files = false;
      }
      hideCompletions();
    }
  }, 120);
}

function onPromptKey(event) {
  const open = !$("completions").hidden && completion.items.length;
  if (open && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
    event.preventDefault();
    const n = completion.items.length;
    completion.index = (completion.index + (event.key === "ArrowDown" ? 1 : n - 1)) % n;
    [...$("completions").children].forEach((row, i) => row.classList.toggle("selected", i === completion.index));
    return;
  }
  if (open && (event.key === "Tab" || event.key === "Enter")) {
    event.preventDefault();
    applyCompletion();
    return;
  }
  if (open && event.key === "Escape") { hideCompletions(); return; }
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    submit(event.altKey && state.running);
  }
}

// ---------------------------------------------------------------------------------------------
// Wiring

$("composer").addEventListener("submit", (event) => { event.preventDefault(); submit(false); });
$("steer").addEventListener("click", () => submit(true));
$("cancel").addEventListener("click", async () => {
  if (!state.current) return;
  try { await api("POST", `/api/sessions/${state.current}/cancel`, {}); } catch (err) { note(err.message); }
});
$("prompt").addEventListener("input", onPromptInput);
$("prompt").addEventListener("keydown", onPromptKey);
$("prompt").addEventListener("blur", () => setTimeout(hideCompletions, 150));
$("search").addEventListener("input", scheduleList);
// Only the reader scrolling up stops following (content added below never moves scrollTop up).
let lastTop = 0;
$("transcript").addEventListener("scroll", () => {
  const t = $("transcript");
  const near = t.scrollHeight - t.scrollTop - t.clientHeight < 40;
  if (near) {
    state.follow = true;
    $("to-end").hidden = true;
  } else if (t.scrollTop < lastTop - 1) {
    state.follow = false;
  }
  lastTop = t.scrollTop;
});
new MutationObserver(contentChanged).observe($("transcript"), { childList: true, subtree: true, characterData: true });
new ResizeObserver(() => { if (state.follow) follow(true); }).observe($("transcript"));
$("to-end").addEventListener("click", () => follow(true));
window.addEventListener("hashchange", openFromHash);
$("new-session").addEventListener("click", newSession);
$("plan-mode").addEventListener("change", async () => {
  if (!state.current || !state.live) return;
  const permissionMode = $("plan-mode").checked ? "plan" : "default";
  try {
    await api("POST", `/api/sessions/${state.current}/mode`, { permissionMode });
  } catch (err) {
    $("plan-mode").checked = !$("plan-mode").checked;
    note(err.status === 404 || err.status === 405 ? "This server cannot switch modes." : err.message);
  }
});
$("project-filter").addEventListener("change", async () => {
  const select = $("project-filter");
  if (select.value === "\u0000other") {
    const path = window.prompt("A project directory (absolute path):", state.project || state.serverCwd || "");
    if (path && path.startsWith("/")) {
      if (!state.projects.some((p) => p.cwd === path)) {
        state.projects.push({ cwd: path });
        const option = document.createElement("option");
        option.value = path;
        option.textContent = basename(path);
        option.title = path;
        select.insertBefore(option, select.lastElementChild);
      }
      state.project = path;
    }
    select.value = state.project;
  } else {
    state.project = select.value;
  }
  if (!state.current) { updateComposer(); showHead(); }
  listSessions();
});

async function boot() {
  try {
    const server = await api("GET", "/api/server");
    state.serverCwd = server.cwd;
    state.project = server.cwd;
    $("project-name").textContent = server.cwd;
    $("project-name").title = server.cwd;
  } catch (err) {
    note(err.message).classList.add("error");
  }
  await loadProjects();
  listSessions();
  await openFromHash();
}

// The session the address names (`#session=ID`), at boot and when only the hash changes.
async function openFromHash() {
  const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
  if (wanted && wanted === state.current) return;
  if (wanted) {
    let live = true;
    try { await api("GET", `/api/sessions/${wanted}/pending`); } catch { live = false; }
    openSession(wanted, live);
  } else {
    newSession();
  }
}

boot();
