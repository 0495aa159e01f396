// Drives the web UI of `codecoder serve` in a real headless Chromium (Debian's `chromium`,
// through a pinned `puppeteer-core`), as a person would: clicks, typing, a reload.
//
// Usage: node drive.mjs SCENARIO URL, URL being the line `codecoder serve` printed (with its
// token). Scenarios:
//   main    start a session on the server's project, see the streamed text (the transcript
//           kept at its end), approve a command and see its output, reload while the edit's
//           approval is pending (opened at the end) and answer it after the reload, see the
//           diff; search the list; a session opened by the address's hash alone; a phone-sized
//           page without horizontal overflow.
//   cancel  start a session whose command sleeps, wait for the sleep process, cancel it from
//           the page.
//   plan    start a session in plan mode, send its plan back with feedback, approve the next.
//   question  the model's question, answered in the page's own words; the session closed,
//             shown from its log and resumed from the composer.
//   gap     two turns; reload while the second waits for an approval (in a server that keeps
//           fewer events than that, the page draws the rest from the log): nothing twice, no
//           request said withdrawn.
// Environment: CODECODER_TEST_CHROMIUM (the browser), CODECODER_TEST_PUPPETEER (the npm prefix
// holding puppeteer-core), REPO (the project the server was started in), SLEEP_MARKER (cancel:
// what the slow command's command line holds), CODECODER_WEB_SCREENSHOTS (a directory: the
// main views are saved there as PNGs; unset, none are taken), DRIVE_TIMEOUT_MS (default 180 s).
//
// Prints one line {"summary": …}, which the Rust test asserts on; `error` is null when every
// step passed.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const prefix = process.env.CODECODER_TEST_PUPPETEER;
const puppeteer = (await import(pathToFileURL(join(prefix, "node_modules/puppeteer-core/lib/esm/puppeteer/puppeteer-core.js")).href)).default;

const [scenario, url] = process.argv.slice(2);
const shots = process.env.CODECODER_WEB_SCREENSHOTS || "";
const summary = { scenario, steps: [], notes: {}, console: [], error: null };
const step = (name) => summary.steps.push(name);
const timeout = Number(process.env.DRIVE_TIMEOUT_MS || 180000);
const guard = setTimeout(() => {
  summary.error = `timed out after ${timeout} ms; steps done: ${summary.steps.join(", ")}`;
  finish(2);
}, timeout);

let browser = null;
async function finish(code) {
  clearTimeout(guard);
  process.stdout.write(`${JSON.stringify({ summary })}\n`);
  try { await browser?.close(); } catch { /* already gone */ }
  process.exit(code);
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

/// Processes whose command line holds `needle` (read from /proc, as the Rust tests do).
function processesRunning(needle) {
  let n = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " ");
      if (cmdline.includes(needle) && !cmdline.includes("drive.mjs")) n++;
    } catch { /* the process ended meanwhile */ }
  }
  return n;
}

async function until(what, predicate, ms = 60000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`waited in vain for ${what}`);
}

async function shot(page, name) {
  if (!shots) return;
  await page.screenshot({ path: join(shots, `web-${name}.png`) });
  step(`screenshot ${name}`);
}

/// The text of every node matching `selector`.
const texts = (page, selector) => page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent));

/// Waits until a node matching `selector` holds `text`; the texts of all of them then.
async function waitText(page, selector, text, ms) {
  const handle = await page.waitForFunction(
    (sel, want) => {
      const all = [...document.querySelectorAll(sel)].map((n) => n.textContent);
      return all.some((t) => t.includes(want)) && all;
    },
    { timeout: ms || 60000, polling: 50 }, selector, text,
  );
  return handle.jsonValue();
}

async function openPage() {
  browser = await puppeteer.launch({
    executablePath: process.env.CODECODER_TEST_CHROMIUM,
    headless: true,
    timeout: 90000,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars"],
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(60000);
  page.setDefaultNavigationTimeout(60000);
  await page.setViewport({ width: 1100, height: 760 });
  page.on("console", (message) => summary.console.push(`${message.type()}: ${message.text()}`));
  page.on("pageerror", (err) => summary.console.push(`pageerror: ${err.message}`));
  await page.goto(url, { waitUntil: "domcontentloaded" });
  summary.notes.address = page.url();
  check(!page.url().includes("token="), `the address kept the token: ${page.url()}`);
  await page.waitForFunction(() => document.getElementById("project-name").textContent !== "", { timeout: 60000 });
  summary.notes.project = await page.$eval("#project-name", (n) => n.textContent);
  summary.notes.sendLabel = await page.$eval("#send", (n) => n.textContent);
  step("opened");
  return page;
}

async function send(page, text) {
  await page.click("#prompt");
  await page.keyboard.type(text);
  await page.click("#send");
}

/// The approval box whose text holds `needle`, once it is there.
async function approval(page, needle) {
  await waitText(page, ".ask.approval", needle);
  return page.evaluate((want) => {
    const box = [...document.querySelectorAll(".ask.approval")].find((n) => n.textContent.includes(want));
    return {
      id: box.id,
      title: box.querySelector(".ask-title")?.textContent,
      reason: box.querySelector(".reason")?.textContent,
      added: [...box.querySelectorAll(".diff-add")].map((n) => n.textContent),
      removed: [...box.querySelectorAll(".diff-del")].map((n) => n.textContent),
      command: box.querySelector("pre.command")?.textContent || null,
    };
  }, needle);
}

/// Whether the transcript shows its end (waited for a while: content renders on a frame).
async function atEnd(page) {
  const measure = () => page.$eval("#transcript", (t) => ({ scrollTop: t.scrollTop, clientHeight: t.clientHeight, scrollHeight: t.scrollHeight }));
  const end = (m) => m.scrollHeight > m.clientHeight && Math.abs(m.scrollTop + m.clientHeight - m.scrollHeight) <= 2;
  let m = await measure();
  for (const deadline = Date.now() + 5000; !end(m) && Date.now() < deadline; m = await measure()) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { atEnd: end(m), ...m };
}

/// The notes that say a request was withdrawn.
const withdrawn = (page) => page.$$eval(".note", (n) => n.filter((x) => x.textContent.includes("withdrawn")).map((x) => x.textContent));

async function noHorizontalOverflow(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll("body *")]
      .filter((n) => n.getClientRects().length && n.getBoundingClientRect().right > width + 1)
      .filter((n) => !n.closest("pre, .diff, .output, .command"))
      .map((n) => `${n.tagName.toLowerCase()}#${n.id}.${n.className}`);
    return { scrollWidth: document.documentElement.scrollWidth, width, wide: wide.slice(0, 10) };
  });
}

async function main() {
  const page = await openPage();
  check(summary.notes.sendLabel === "Start a session", `the composer is not ready for a new session: ${summary.notes.sendLabel}`);
  await send(page, "Make the change, please");
  step("sent");
  // The model's text streams in before the command's approval.
  summary.notes.streamed = (await waitText(page, ".agent", "Let me look")).join("\n");
  step("streamed text");
  const command = await approval(page, "approved.txt");
  summary.notes.commandApproval = command;
  // The long reply and the approval box below it: the transcript still shows its end.
  summary.notes.endAtApproval = await atEnd(page);
  // The approval comes from the stream: the turn is drawn from it by now (a session opened
  // while its turn starts shows the log's copy of the turn until the stream's arrives).
  await waitText(page, ".agent", "Let me look");
  summary.notes.reasoningFolded = await page.$eval("details.reasoning", (n) => !n.open && n.textContent.includes("Reasoning"));
  summary.notes.codeHighlighted = await page.$$eval(".agent pre.code .hl-keyword", (n) => n.length);
  summary.notes.userBubble = (await texts(page, ".user")).join("\n");
  // Markup in the model's text is shown as text, never made into elements.
  summary.notes.injected = await page.$$eval("#transcript img, #transcript script, #transcript [onerror]", (n) => n.length);
  await shot(page, "approval");
  await page.click(`[id="${command.id}"] button[data-decision="allow_once"]`);
  await waitText(page, "details.tool pre.output", "made-it");
  summary.notes.commandCard = await page.evaluate(() => {
    const card = [...document.querySelectorAll("details.tool")].find((n) => n.textContent.includes("made-it"));
    return { title: card.querySelector(".title").textContent, badge: card.querySelector(".badge").textContent, output: card.querySelector("pre.output").textContent };
  });
  step("command approved and its output seen");

  // The edit's approval: pending while the page reloads.
  const edit = await approval(page, "notes.txt");
  summary.notes.editApproval = edit;
  await page.reload({ waitUntil: "domcontentloaded" });
  step("reloaded");
  const again = await approval(page, "notes.txt");
  summary.notes.editApprovalAfterReload = again;
  await waitText(page, "details.tool pre.output", "made-it");
  summary.notes.endAfterReload = await atEnd(page);
  summary.notes.userBubbleAfterReload = (await texts(page, ".user")).join("\n");
  await page.click(`[id="${again.id}"] button[data-decision="allow_once"]`);
  await waitText(page, ".agent", "All done");
  await page.waitForFunction(() => document.getElementById("cancel").hidden, { timeout: 60000 });
  summary.notes.editCard = await page.evaluate(() => {
    const card = [...document.querySelectorAll("details.tool")].find((n) => n.dataset.kind === "edit");
    return card && {
      title: card.querySelector(".title").textContent,
      badge: card.querySelector(".badge").textContent,
      added: [...card.querySelectorAll(".diff-add")].map((n) => n.textContent),
      removed: [...card.querySelectorAll(".diff-del")].map((n) => n.textContent),
    };
  });
  summary.notes.pendingLeft = await page.$$eval(".ask", (n) => n.length);
  summary.notes.withdrawn = await withdrawn(page);
  summary.notes.usage = await page.$eval("#usage", (n) => n.textContent);
  step("edit approved after the reload, its diff seen");

  // `@file` completion, where the server offers it.
  const id = decodeURIComponent(new URL(page.url()).hash.replace(/^#session=/, ""));
  summary.notes.sessionId = id;
  summary.notes.filesRoute = await page.evaluate(async (sid) => (await fetch(`/api/sessions/${sid}/files?q=no`)).status, id);
  if (summary.notes.filesRoute === 200) {
    await page.click("#prompt");
    await page.keyboard.type("look at @note");
    await page.waitForSelector("#completions:not([hidden]) .item", { timeout: 60000 });
    summary.notes.completions = await texts(page, "#completions .item .name");
    await page.keyboard.press("Tab");
    summary.notes.completed = await page.$eval("#prompt", (n) => n.value);
    await page.$eval("#prompt", (n) => { n.value = ""; });
    step("@file completion");
  }
  summary.notes.commandsRoute = await page.evaluate(async (sid) => (await fetch(`/api/sessions/${sid}/commands`)).status, id);
  if (summary.notes.commandsRoute === 200) {
    await page.click("#prompt");
    await page.keyboard.type("/");
    await page.waitForSelector("#completions:not([hidden]) .item", { timeout: 60000 });
    summary.notes.slashCommands = await texts(page, "#completions .item .name");
    await page.keyboard.press("Escape");
    await page.$eval("#prompt", (n) => { n.value = ""; });
    step("slash commands");
  }
  await page.$eval("details.tool[data-kind=edit]", (n) => n.scrollIntoView());
  await shot(page, "transcript");

  // The list: searched, and the session found by its title.
  await page.click("#search");
  await page.keyboard.type("no-such-session-title");
  await waitText(page, "#sessions li", "No session matches");
  await page.$eval("#search", (n) => { n.value = ""; });
  await page.type("#search", "change");
  await page.waitForFunction(() => document.querySelectorAll("#sessions li[data-id]").length === 1, { timeout: 60000 });
  summary.notes.listed = await texts(page, "#sessions li[data-id] .title");
  step("search");

  // A phone.
  await page.setViewport({ width: 375, height: 740, isMobile: true, hasTouch: true, deviceScaleFactor: 1 });
  await page.goto(new URL("/", page.url()).href, { waitUntil: "domcontentloaded" });
  await page.waitForSelector("#sessions li[data-id]", { timeout: 60000 });
  // Only the hash changed: the page opens that session.
  await page.evaluate((sid) => { location.hash = `#session=${encodeURIComponent(sid)}`; }, id);
  await waitText(page, ".agent", "All done");
  summary.notes.openedByHash = await page.$eval("#send", (n) => n.textContent);
  await page.click("#new-session");
  step("opened by the hash");
  summary.notes.phone = await noHorizontalOverflow(page);
  summary.notes.phoneVisible = await page.evaluate(() => {
    const visible = (sel) => {
      const r = document.querySelector(sel).getBoundingClientRect();
      return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= document.documentElement.clientWidth + 1 && r.top < window.innerHeight;
    };
    return { list: visible("#sessions li[data-id]"), prompt: visible("#prompt"), send: visible("#send") };
  });
  // In the page, at once: the list is drawn again as the opened session's events come in.
  await page.$eval("#sessions li[data-id]", (n) => n.click());
  await waitText(page, ".agent", "All done");
  summary.notes.phoneSession = await noHorizontalOverflow(page);
  await shot(page, "phone");
  step("phone");
}

async function cancel() {
  const marker = process.env.SLEEP_MARKER;
  const page = await openPage();
  await send(page, "wait a while");
  await page.waitForFunction(() => [...document.querySelectorAll("details.tool.running")].length > 0, { timeout: 60000 });
  await until("the sleep process", () => processesRunning(`sleep ${marker}`) > 0);
  summary.notes.sleepingBeforeCancel = processesRunning(`sleep ${marker}`);
  // The page shows Cancel once the stream has told it of the running turn (the log's copy
  // of the turn, drawn first, does not).
  await page.waitForSelector("#cancel:not([hidden])");
  summary.notes.cancelVisible = await page.$eval("#cancel", (n) => !n.hidden);
  // Steering while the command runs: the text goes to the turn's next step.
  await page.type("#prompt", "also list the files");
  await page.click("#steer");
  await waitText(page, ".note.steer", "also list the files");
  step("steered");
  await page.click("#cancel");
  step("cancel clicked");
  await waitText(page, ".note", "Cancelled.");
  await page.waitForFunction(() => document.getElementById("cancel").hidden, { timeout: 60000 });
  summary.notes.card = await page.$eval("details.tool", (n) => ({ classes: n.className, badge: n.querySelector(".badge").textContent }));
  step("cancelled");
}

async function plan() {
  const page = await openPage();
  await page.click("#plan-mode");
  await send(page, "Plan the change");
  await page.waitForSelector(".ask.plan-review", { timeout: 60000 });
  summary.notes.firstPlan = await page.$eval(".ask.plan-review", (box) => ({
    title: box.querySelector(".ask-title").textContent,
    items: [...box.querySelectorAll(".plan li")].map((n) => n.textContent),
    buttons: [...box.querySelectorAll("button")].map((n) => n.textContent),
  }));
  summary.notes.head = await page.$eval("#session-head", (n) => n.textContent);
  await shot(page, "plan");
  await page.type(".ask.plan-review textarea.feedback", "Also add a test");
  await page.click(".ask.plan-review button:not(.primary)");
  step("kept planning with feedback");
  await waitText(page, ".ask.plan-review .plan li", "Add a test");
  summary.notes.secondPlan = await page.$$eval(".ask.plan-review .plan li", (n) => n.map((li) => li.textContent));
  await page.click(".ask.plan-review button.primary");
  step("approved");
  await waitText(page, ".agent", "Carrying out the plan");
  await page.waitForFunction(() => document.getElementById("cancel").hidden, { timeout: 60000 });
  summary.notes.reviewsLeft = await page.$$eval(".ask", (n) => n.length);
  // The page asks the server for the session's mode after the turn.
  await page.waitForFunction(() => !document.getElementById("plan-mode").checked).catch(() => null);
  summary.notes.planMode = await page.$eval("#plan-mode", (n) => n.checked);
}

async function gap() {
  const page = await openPage();
  await send(page, "first");
  await waitText(page, ".agent", "First answer.");
  await page.waitForFunction(() => document.getElementById("cancel").hidden, { timeout: 60000 });
  await send(page, "second");
  const asked = await approval(page, "gap.txt");
  // The reloaded page's stream comes late, as on a slow network: the pending requests are
  // shown before it replays the first turn's end.
  await page.setRequestInterception(true);
  page.on("request", (request) => {
    if (request.url().includes("/events")) setTimeout(() => request.continue().catch(() => null), 800);
    else request.continue().catch(() => null);
  });
  // A server that keeps fewer events than the session has had tells the reloaded page of a gap.
  await page.reload({ waitUntil: "domcontentloaded" });
  step("reloaded");
  const again = await approval(page, "gap.txt");
  summary.notes.sameRequest = asked.id === again.id;
  await page.click(`[id="${again.id}"] button[data-decision="allow_once"]`);
  await waitText(page, ".agent", "Second answer.");
  await page.waitForFunction(() => document.getElementById("cancel").hidden, { timeout: 60000 });
  summary.notes.withdrawn = await withdrawn(page);
  summary.notes.users = await texts(page, ".user");
  summary.notes.agents = await texts(page, ".agent");
  summary.notes.cards = await texts(page, "details.tool .title");
  summary.notes.gapSeen = await page.evaluate(async () => {
    const id = decodeURIComponent(location.hash.replace(/^#session=/, ""));
    const text = await (await fetch(`/api/sessions/${id}/events?after=0`, { signal: AbortSignal.timeout(20000) }).catch(() => null))?.body?.getReader().read().then((r) => new TextDecoder().decode(r.value)).catch(() => "");
    return String(text || "").includes('"gap"');
  });
  step("answered after the gap");
}

async function question() {
  const page = await openPage();
  await send(page, "style it");
  await waitText(page, ".ask.question", "Which color");
  summary.notes.question = await page.$eval(".ask.question", (box) => ({
    text: box.querySelector(".markdown").textContent,
    buttons: [...box.querySelectorAll("button")].map((n) => n.textContent),
  }));
  await page.type(".ask.question input.feedback", "green, please");
  await page.keyboard.press("Enter");
  step("answered");
  await waitText(page, ".agent", "Green it is.");
  summary.notes.questionsLeft = await page.$$eval(".ask", (n) => n.length);
  // Closed by the server, the session is shown from its log and resumed from the composer.
  summary.notes.closed = await page.evaluate(async () => {
    const id = decodeURIComponent(location.hash.replace(/^#session=/, ""));
    const answer = await fetch(`/api/sessions/${id}/close`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    return answer.status;
  });
  await page.reload({ waitUntil: "domcontentloaded" });
  await waitText(page, "#session-head", "not running here");
  summary.notes.fromLog = { users: await texts(page, ".user"), agents: await waitText(page, ".agent", "Green it is."), send: await page.$eval("#send", (n) => n.textContent) };
  await send(page, "and the border?");
  await waitText(page, ".agent", "A green border too.");
  summary.notes.resumed = { users: await texts(page, ".user"), send: await page.$eval("#send", (n) => n.textContent) };
  step("resumed");
  // The page's Markdown renderer and highlighter, called as the page calls them.
  summary.notes.markdown = await page.evaluate(async () => {
    const { markdown } = await import("/app.js");
    return {
      tags: markdown("<b>x</b> <script>alert(1)</script>"),
      scriptLink: markdown("[a](javascript:alert(1))"),
      link: markdown("[a](https://x.test/)"),
      quoteInLink: markdown('[a](https://x.test/"onmouseover=alert(1))'),
      inline: markdown("**b** *i* `c <d>`"),
      code: markdown('```js\nconst a = "s"; // c\n```'),
      list: markdown("- one\n- [x] two\n\n1. three"),
      table: markdown("| a | b |\n|---|:-:|\n| <x> | `c \\| d` |\nafter"),
    };
  });
}

try {
  if (scenario === "main") await main();
  else if (scenario === "question") await question();
  else if (scenario === "gap") await gap();
  else if (scenario === "plan") await plan();
  else if (scenario === "cancel") await cancel();
  else throw new Error(`unknown scenario ${scenario}`);
  await finish(0);
} catch (err) {
  summary.error = String(err?.stack || err);
  await finish(1);
}
