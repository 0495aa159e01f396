// Drives codecoder through the Claude Agent SDK for TypeScript (`@anthropic-ai/claude-agent-sdk`),
// unchanged: `pathToClaudeCodeExecutable` points the SDK at the codecoder binary, which it spawns
// with its usual stream-json argv and answers over the control protocol (permission callback,
// hook callbacks, an in-process MCP server, interrupt).
//
// Usage: node drive.mjs SCENARIO, with the workspace as the working directory.
// Environment: CODECODER_BIN (the binary), CODECODER_TEST_CLAUDE_SDK_JS (the npm prefix holding
// the SDK), SDK_MODEL (the model option), SDK_OTHER_MODEL (controls: the model switched to),
// SLEEP_MARKER (interrupt: what the slow command's command line holds, to wait for it),
// DRIVE_TIMEOUT_MS (a guard against a run that never ends; default 90 s). Everything else in the
// environment reaches codecoder (CODECODER_HOME, ANTHROPIC_BASE_URL, ...).
//
// Prints one line {"sdk":"ts","message":…} per message the SDK yields, then one line
// {"summary":…} in the shape drive.py prints too, which the Rust test asserts on.
import { readdirSync, readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const prefix = process.env.CODECODER_TEST_CLAUDE_SDK_JS;
const load = (path) => import(pathToFileURL(`${prefix}/node_modules/${path}`).href);
const { query, tool, createSdkMcpServer } = await load("@anthropic-ai/claude-agent-sdk/sdk.mjs");
const { z } = await load("zod/index.js");

const scenario = process.argv[2];
const summary = {
  sdk: "ts",
  scenario,
  init: null,
  texts: [],
  tool_uses: [],
  tool_results: [],
  results: [],
  permission_calls: [],
  hook_calls: [],
  mcp_calls: [],
  notes: {},
  error: null,
  stderr: "",
};

const timeoutMs = Number(process.env.DRIVE_TIMEOUT_MS || 90000);
const guard = setTimeout(() => {
  summary.error = `the run did not end within ${timeoutMs} ms`;
  finish(1);
}, timeoutMs);

function finish(code) {
  clearTimeout(guard);
  summary.stderr = summary.stderr.slice(-4000);
  console.log(JSON.stringify({ summary }));
  process.exit(code);
}

// The options every scenario shares; `env` replaces the SDK's inherited environment, so it is
// passed whole.
function options(extra = {}) {
  return {
    pathToClaudeCodeExecutable: process.env.CODECODER_BIN,
    cwd: process.cwd(),
    env: { ...process.env },
    model: process.env.SDK_MODEL,
    stderr: (data) => {
      summary.stderr += data;
    },
    ...extra,
  };
}

// Records one message in the summary and prints it.
function see(message) {
  console.log(JSON.stringify({ sdk: "ts", message }));
  switch (message.type) {
    case "system":
      if (message.subtype === "init" && summary.init === null) {
        const { session_id, cwd, tools, model, permissionMode, claude_code_version, mcp_servers } =
          message;
        summary.init = {
          session_id,
          cwd,
          tools,
          model,
          permissionMode,
          claude_code_version,
          mcp_servers,
        };
      }
      break;
    case "assistant":
      for (const block of message.message?.content ?? []) {
        if (block.type === "text") summary.texts.push(block.text);
        if (block.type === "tool_use") {
          summary.tool_uses.push({
            id: block.id,
            name: block.name,
            input: block.input,
            parent: message.parent_tool_use_id ?? null,
          });
        }
      }
      break;
    case "user":
      if (Array.isArray(message.message?.content)) {
        for (const block of message.message.content) {
          if (block.type === "tool_result") {
            summary.tool_results.push({
              tool_use_id: block.tool_use_id,
              content: block.content,
              is_error: block.is_error ?? false,
              parent: message.parent_tool_use_id ?? null,
            });
          }
        }
      }
      break;
    case "stream_event": {
      summary.notes.stream_events = (summary.notes.stream_events ?? 0) + 1;
      const { event } = message;
      if (event?.type === "content_block_delta" && event.delta?.type === "text_delta") {
        summary.notes.streamed_text = (summary.notes.streamed_text ?? "") + event.delta.text;
      }
      break;
    }
    case "result": {
      const { subtype, is_error, result, session_id, errors, structured_output } = message;
      const { total_cost_usd, num_turns, permission_denials } = message;
      summary.results.push({
        subtype,
        is_error,
        result: result ?? null,
        session_id,
        errors: errors ?? null,
        structured_output: structured_output ?? null,
        total_cost_usd,
        num_turns,
        permission_denials: permission_denials ?? null,
      });
      break;
    }
  }
}

async function run(prompt, extra) {
  for await (const message of query({ prompt, options: options(extra) })) {
    see(message);
  }
}

// The number of processes whose command line holds MARKER (the slow command, and its shell).
function sleeping(marker) {
  let n = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      if (cmdline.includes(marker)) n += 1;
    } catch {
      // The process ended while the directory was read.
    }
  }
  return n;
}

// The number of `sleep MARKER` processes themselves: the shells and wrappers that hold the
// marker in their command lines come and go before the command runs.
function sleepStarted(marker) {
  let n = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      const program = argv[0].split("/").pop();
      if (program === "sleep" && argv[1] === marker) n += 1;
    } catch {
      // The process ended while the directory was read.
    }
  }
  return n;
}

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const scenarios = {
  async plain() {
    await run("say hi");
  },

  // The start-up bench (crates/cli/benches/claude_sdk.rs): the wall-clock time of the query()
  // call, which the bench compares with the fake model's first request.
  async bench() {
    console.log(JSON.stringify({ query_at_ms: performance.timeOrigin + performance.now() }));
    await run("say hi");
  },

  // The callback allows the command that touches allowed.txt and denies the other one.
  // The callback denies the command that touches denied.txt, and allows the other one with its
  // file renamed to updated.txt.
  async permissions() {
    await run("touch two files", {
      canUseTool: async (toolName, input, { toolUseID }) => {
        summary.permission_calls.push({ tool_name: toolName, input, tool_use_id: toolUseID });
        const command = String(input.command ?? "");
        if (command.includes("denied.txt")) {
          return { behavior: "deny", message: "denied by the ts callback" };
        }
        return {
          behavior: "allow",
          updatedInput: { ...input, command: command.replace("allowed.txt", "updated.txt") },
        };
      },
    });
  },

  // The callback allows the first `touch` and every later one for the session.
  async grants() {
    await run("touch two files", {
      canUseTool: async (toolName, input, { toolUseID }) => {
        summary.permission_calls.push({ tool_name: toolName, input, tool_use_id: toolUseID });
        return {
          behavior: "allow",
          updatedInput: input,
          updatedPermissions: [
            {
              type: "addRules",
              rules: [{ toolName: "Bash", ruleContent: "touch:*" }],
              behavior: "allow",
              destination: "session",
            },
          ],
        };
      },
    });
  },

  // Partial messages: the model's stream events as they come.
  async partial() {
    await run("say hi", { includePartialMessages: true });
  },

  // A PreToolUse hook denies every Bash call; the permission mode would otherwise run it.
  async hook() {
    await run("touch hooked.txt", {
      permissionMode: "bypassPermissions",
      allowDangerouslySkipPermissions: true,
      hooks: {
        PreToolUse: [
          {
            matcher: "Bash",
            hooks: [
              async (input, toolUseID) => {
                summary.hook_calls.push({
                  hook_event_name: input.hook_event_name,
                  tool_name: input.tool_name,
                  tool_input: input.tool_input,
                  tool_use_id: toolUseID ?? null,
                });
                return {
                  hookSpecificOutput: {
                    hookEventName: "PreToolUse",
                    permissionDecision: "deny",
                    permissionDecisionReason: "blocked by the ts hook",
                  },
                };
              },
            ],
          },
        ],
      },
    });
  },

  // Hooks at the other events of a turn: UserPromptSubmit adds context, PostToolUse and Stop
  // only record.
  async turn_hooks() {
    const record = (extra) => async (input, toolUseID) => {
      summary.hook_calls.push({
        hook_event_name: input.hook_event_name,
        tool_name: input.tool_name ?? null,
        tool_use_id: toolUseID ?? null,
        prompt: input.prompt ?? null,
        has_tool_response: input.tool_response !== undefined,
      });
      return extra(input);
    };
    await run("list the files", {
      permissionMode: "bypassPermissions",
      allowDangerouslySkipPermissions: true,
      hooks: {
        UserPromptSubmit: [
          {
            hooks: [
              record(() => ({
                hookSpecificOutput: {
                  hookEventName: "UserPromptSubmit",
                  additionalContext: "CONTEXT-FROM-THE-TS-HOOK",
                },
              })),
            ],
          },
        ],
        PostToolUse: [{ matcher: "Bash", hooks: [record(() => ({}))] }],
        Stop: [{ hooks: [record(() => ({}))] }],
      },
    });
  },

  // A PreToolUse hook that throws, registered with onFailure "block": the call must not run.
  async hook_failure() {
    await run("touch failing.txt", {
      permissionMode: "bypassPermissions",
      allowDangerouslySkipPermissions: true,
      hooks: {
        PreToolUse: [
          {
            matcher: "Bash",
            onFailure: "block",
            hooks: [
              async (input, toolUseID) => {
                summary.hook_calls.push({
                  hook_event_name: input.hook_event_name,
                  tool_name: input.tool_name,
                  tool_input: input.tool_input,
                  tool_use_id: toolUseID ?? null,
                });
                throw new Error("the ts hook exploded");
              },
            ],
          },
        ],
      },
    });
  },

  // An in-process MCP server whose one tool adds two numbers.
  async sdk_mcp() {
    const add = tool("add", "Adds two numbers", { a: z.number(), b: z.number() }, async ({ a, b }) => {
      summary.mcp_calls.push({ tool: "add", args: { a, b } });
      return { content: [{ type: "text", text: `the sum is ${a + b}` }] };
    });
    const calc = createSdkMcpServer({ name: "calc", version: "1.0.0", tools: [add] });
    await run("add 40 and 2", { mcpServers: { calc }, allowedTools: ["mcp__calc__add"] });
  },

  // An external stdio MCP server (tests/claude-sdk/echo-mcp-server.mjs) given as an option: the
  // SDK hands it over in initialize (mcpServers, with --await-initialize).
  async external_mcp() {
    const server = new URL("./echo-mcp-server.mjs", import.meta.url).pathname;
    await run("echo ping", {
      mcpServers: { echo: { type: "stdio", command: "node", args: [server] } },
      allowedTools: ["mcp__echo__echo"],
    });
  },

  // A streaming prompt, interrupted while the command it started sleeps.
  async interrupt() {
    const marker = process.env.SLEEP_MARKER;
    let release;
    const released = new Promise((resolve) => {
      release = resolve;
    });
    async function* prompt() {
      yield {
        type: "user",
        session_id: "",
        message: { role: "user", content: [{ type: "text", text: "sleep a while" }] },
        parent_tool_use_id: null,
      };
      await released;
    }
    const q = query({
      prompt: prompt(),
      options: options({ permissionMode: "bypassPermissions", allowDangerouslySkipPermissions: true }),
    });
    let interrupted = false;
    for await (const message of q) {
      see(message);
      const startedSleep =
        message.type === "assistant" &&
        (message.message?.content ?? []).some((block) => block.type === "tool_use");
      if (startedSleep && !interrupted) {
        interrupted = true;
        // The tool call is announced before its command runs: wait for the process itself.
        let waited = 0;
        while (sleepStarted(marker) === 0 && waited < 20000) {
          await delay(20);
          waited += 20;
        }
        summary.notes.sleeping_before_interrupt = sleepStarted(marker);
        summary.notes.interrupt_response = (await q.interrupt()) ?? null;
      }
      if (message.type === "result") release();
    }
    summary.notes.sleeping_after = sleeping(marker);
  },

  // A streaming session switched by control requests before its prompt: the permission mode, the
  // model, the MCP servers' status, the commands.
  async controls() {
    let go;
    const ready = new Promise((resolve) => {
      go = resolve;
    });
    let release;
    const released = new Promise((resolve) => {
      release = resolve;
    });
    async function* prompt() {
      await ready;
      yield {
        type: "user",
        session_id: "",
        message: { role: "user", content: [{ type: "text", text: "say hi" }] },
        parent_tool_use_id: null,
      };
      await released;
    }
    const q = query({ prompt: prompt(), options: options() });
    const reading = (async () => {
      for await (const message of q) {
        see(message);
        if (message.type === "result") release();
      }
    })();
    summary.notes.set_permission_mode = (await q.setPermissionMode("acceptEdits")) ?? null;
    summary.notes.set_model = (await q.setModel(process.env.SDK_OTHER_MODEL)) ?? null;
    summary.notes.mcp_status = await q.mcpServerStatus();
    summary.notes.commands = await q.supportedCommands();
    go();
    await reading;
  },

  // A subagent's run: its messages carry the id of the call that started it.
  async subagent() {
    await run("have a subagent look around", {
      permissionMode: "bypassPermissions",
      allowDangerouslySkipPermissions: true,
    });
  },

  // An agent defined by the caller (initialize's agents), which the model then starts.
  async agents() {
    await run("have the reviewer look", {
      permissionMode: "bypassPermissions",
      allowDangerouslySkipPermissions: true,
      agents: {
        reviewer: {
          description: "Reviews code read-only",
          prompt: "You are REVIEWER-PROMPT.",
          tools: ["Read", "Grep"],
        },
      },
    });
  },

  // A system prompt of the caller's, then Claude Code's preset with a line appended.
  async system_prompt() {
    await run("who are you?", { systemPrompt: "You are PIRATE-PROMPT." });
    await run("and now?", {
      systemPrompt: { type: "preset", preset: "claude_code", append: "APPENDED-LINE" },
    });
  },

  // A first run, then a second that resumes its session.
  async resume() {
    await run("remember the word pelican");
    const id = summary.results[0]?.session_id;
    summary.notes.first_session_id = id ?? null;
    await run("which word?", { resume: id });
  },

  // A first run, a fork of it, then the newest session of the directory continued.
  async fork() {
    await run("remember the word pelican");
    const id = summary.results[0]?.session_id;
    await run("fork it", { resume: id, forkSession: true });
    await run("and continue", { continue: true });
  },

  async json_schema() {
    const schema = {
      type: "object",
      properties: { answer: { type: "integer" } },
      required: ["answer"],
      additionalProperties: false,
    };
    await run("what is 6 times 7?", { outputFormat: { type: "json_schema", schema } });
  },

  async max_turns() {
    await run("list the files, then explain", {
      maxTurns: 1,
      permissionMode: "bypassPermissions",
      allowDangerouslySkipPermissions: true,
    });
  },

  async budget() {
    await run("do something expensive", {
      maxBudgetUsd: 0.0001,
      permissionMode: "bypassPermissions",
      allowDangerouslySkipPermissions: true,
    });
  },
};

const body = scenarios[scenario];
if (body === undefined) {
  summary.error = `unknown scenario ${scenario}`;
  finish(2);
}
try {
  await body();
} catch (error) {
  summary.error = String(error?.stack ?? error);
}
finish(0);
