"""Drives codecoder through the Claude Agent SDK for Python (`claude-agent-sdk`), unchanged:
`cli_path` points the SDK at the codecoder binary, which it spawns with its usual stream-json
argv and answers over the control protocol (permission callback, hook callbacks, an in-process
MCP server, interrupt).

Usage: python drive.py SCENARIO, with the workspace as the working directory.
Environment: CODECODER_BIN (the binary), SDK_MODEL (the model option), SDK_OTHER_MODEL
(controls: the model switched to), SLEEP_MARKER (interrupt: what the slow command's command line
holds, to wait for it), DRIVE_TIMEOUT_MS (a guard against a run that never ends; default 90 s).
The environment reaches codecoder too (the SDK adds its own variables to it).

Prints one line {"sdk":"py","class":…,"message":…} per message the SDK yields, then one line
{"summary":…} in the shape drive.mjs prints too, which the Rust test asserts on.
"""

import asyncio
import dataclasses
import json
import os
import sys
import time
import traceback

from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from claude_agent_sdk.types import PermissionRuleValue

scenario = sys.argv[1] if len(sys.argv) > 1 else ""
summary = {
    "sdk": "py",
    "scenario": scenario,
    "init": None,
    "texts": [],
    "tool_uses": [],
    "tool_results": [],
    "results": [],
    "permission_calls": [],
    "hook_calls": [],
    "mcp_calls": [],
    "notes": {},
    "error": None,
    "stderr": "",
}


def on_stderr(line):
    summary["stderr"] += line + "\n"


def options(**extra):
    """The options every scenario shares."""
    return ClaudeAgentOptions(
        cli_path=os.environ["CODECODER_BIN"],
        cwd=os.getcwd(),
        model=os.environ.get("SDK_MODEL"),
        stderr=on_stderr,
        **extra,
    )


def see(message):
    """Records one message in the summary and prints it."""
    body = (
        dataclasses.asdict(message) if dataclasses.is_dataclass(message) else repr(message)
    )
    print(
        json.dumps({"sdk": "py", "class": type(message).__name__, "message": body}, default=str),
        flush=True,
    )
    if isinstance(message, SystemMessage):
        if message.subtype == "init" and summary["init"] is None:
            data = message.data
            summary["init"] = {
                key: data.get(key)
                for key in (
                    "session_id",
                    "cwd",
                    "tools",
                    "model",
                    "permissionMode",
                    "claude_code_version",
                    "mcp_servers",
                )
            }
    elif isinstance(message, AssistantMessage):
        for block in message.content:
            if isinstance(block, TextBlock):
                summary["texts"].append(block.text)
            elif isinstance(block, ToolUseBlock):
                summary["tool_uses"].append(
                    {
                        "id": block.id,
                        "name": block.name,
                        "input": block.input,
                        "parent": message.parent_tool_use_id,
                    }
                )
    elif isinstance(message, UserMessage):
        if isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    summary["tool_results"].append(
                        {
                            "tool_use_id": block.tool_use_id,
                            "content": block.content,
                            "is_error": bool(block.is_error),
                            "parent": message.parent_tool_use_id,
                        }
                    )
    elif isinstance(message, StreamEvent):
        notes = summary["notes"]
        notes["stream_events"] = notes.get("stream_events", 0) + 1
        event = message.event
        delta = event.get("delta") or {}
        if event.get("type") == "content_block_delta" and delta.get("type") == "text_delta":
            notes["streamed_text"] = notes.get("streamed_text", "") + delta["text"]
    elif isinstance(message, ResultMessage):
        summary["results"].append(
            {
                "subtype": message.subtype,
                "is_error": message.is_error,
                "result": message.result,
                "session_id": message.session_id,
                "errors": message.errors,
                "structured_output": message.structured_output,
                "total_cost_usd": message.total_cost_usd,
                "num_turns": message.num_turns,
                "permission_denials": message.permission_denials,
            }
        )


async def run(prompt, **extra):
    async for message in query(prompt=prompt, options=options(**extra)):
        see(message)


def sleeping(marker):
    """The number of processes whose command line holds MARKER (the slow command, and its shell)."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # The process ended while the directory was read.
        if marker in cmdline:
            n += 1
    return n


def sleep_started(marker):
    """The number of `sleep MARKER` processes themselves: the shells and wrappers that hold the
    marker in their command lines come and go before the command runs."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue  # The process ended while the directory was read.
        if len(argv) >= 2 and os.path.basename(argv[0]) == b"sleep" and argv[1] == marker.encode():
            n += 1
    return n


async def plain():
    await run("say hi")


async def bench():
    """The start-up bench (crates/cli/benches/claude_sdk.rs): the wall-clock time of the query()
    call, which the bench compares with the fake model's first request."""
    print(json.dumps({"query_at_ms": time.time() * 1000}), flush=True)
    await run("say hi")


async def permissions():
    """The callback denies the command that touches denied.txt, and allows the other one with its
    file renamed to updated.txt."""

    async def can_use_tool(tool_name, tool_input, context):
        summary["permission_calls"].append(
            {"tool_name": tool_name, "input": tool_input, "tool_use_id": context.tool_use_id}
        )
        command = str(tool_input.get("command", ""))
        if "denied.txt" in command:
            return PermissionResultDeny(message="denied by the py callback")
        updated = {**tool_input, "command": command.replace("allowed.txt", "updated.txt")}
        return PermissionResultAllow(updated_input=updated)

    await run("touch two files", can_use_tool=can_use_tool)


async def grants():
    """The callback allows the first `touch` and every later one for the session."""

    async def can_use_tool(tool_name, tool_input, context):
        summary["permission_calls"].append(
            {"tool_name": tool_name, "input": tool_input, "tool_use_id": context.tool_use_id}
        )
        rule = PermissionRuleValue(tool_name="Bash", rule_content="touch:*")
        grant = PermissionUpdate(
            type="addRules", rules=[rule], behavior="allow", destination="session"
        )
        return PermissionResultAllow(updated_input=tool_input, updated_permissions=[grant])

    await run("touch two files", can_use_tool=can_use_tool)


async def partial():
    """Partial messages: the model's stream events as they come."""
    await run("say hi", include_partial_messages=True)


async def hook():
    """A PreToolUse hook blocks every Bash call; the permission mode would otherwise run it."""

    async def block(hook_input, tool_use_id, context):
        summary["hook_calls"].append(
            {
                "hook_event_name": hook_input.get("hook_event_name"),
                "tool_name": hook_input.get("tool_name"),
                "tool_input": hook_input.get("tool_input"),
                "tool_use_id": tool_use_id,
            }
        )
        return {"decision": "block", "reason": "blocked by the py hook"}

    await run(
        "touch hooked.txt",
        permission_mode="bypassPermissions",
        hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[block])]},
    )


async def turn_hooks():
    """Hooks at the other events of a turn: UserPromptSubmit adds context, PostToolUse and Stop
    only record."""

    def record(answer):
        async def callback(hook_input, tool_use_id, context):
            summary["hook_calls"].append(
                {
                    "hook_event_name": hook_input.get("hook_event_name"),
                    "tool_name": hook_input.get("tool_name"),
                    "tool_use_id": tool_use_id,
                    "prompt": hook_input.get("prompt"),
                    "has_tool_response": "tool_response" in hook_input,
                }
            )
            return answer

        return callback

    context = {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "CONTEXT-FROM-THE-PY-HOOK",
        }
    }
    await run(
        "list the files",
        permission_mode="bypassPermissions",
        hooks={
            "UserPromptSubmit": [HookMatcher(hooks=[record(context)])],
            "PostToolUse": [HookMatcher(matcher="Bash", hooks=[record({})])],
            "Stop": [HookMatcher(hooks=[record({})])],
        },
    )


async def hook_failure():
    """A PreToolUse hook that raises, registered with on_failure "block": the call must not run."""

    async def explode(hook_input, tool_use_id, context):
        summary["hook_calls"].append(
            {
                "hook_event_name": hook_input.get("hook_event_name"),
                "tool_name": hook_input.get("tool_name"),
                "tool_input": hook_input.get("tool_input"),
                "tool_use_id": tool_use_id,
            }
        )
        raise RuntimeError("the py hook exploded")

    matcher = HookMatcher(matcher="Bash", hooks=[explode], on_failure="block")
    await run(
        "touch failing.txt",
        permission_mode="bypassPermissions",
        hooks={"PreToolUse": [matcher]},
    )


async def sdk_mcp():
    """An in-process MCP server whose one tool adds two numbers."""

    @tool("add", "Adds two numbers", {"a": float, "b": float})
    async def add(args):
        summary["mcp_calls"].append({"tool": "add", "args": args})
        total = args["a"] + args["b"]
        text = f"the sum is {int(total) if float(total).is_integer() else total}"
        return {"content": [{"type": "text", "text": text}]}

    calc = create_sdk_mcp_server("calc", version="1.0.0", tools=[add])
    await run("add 40 and 2", mcp_servers={"calc": calc}, allowed_tools=["mcp__calc__add"])


async def external_mcp():
    """An external stdio MCP server (tests/claude-sdk/echo-mcp-server.mjs) given as an option:
    the SDK hands it over in --mcp-config."""
    server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "echo-mcp-server.mjs")
    await run(
        "echo ping",
        mcp_servers={"echo": {"type": "stdio", "command": "node", "args": [server]}},
        allowed_tools=["mcp__echo__echo"],
    )


async def interrupt():
    """A ClaudeSDKClient session, interrupted while the command it started sleeps."""
    marker = os.environ["SLEEP_MARKER"]
    async with ClaudeSDKClient(options(permission_mode="bypassPermissions")) as client:
        await client.query("sleep a while")
        interrupted = False
        async for message in client.receive_response():
            see(message)
            started = isinstance(message, AssistantMessage) and any(
                isinstance(block, ToolUseBlock) for block in message.content
            )
            if started and not interrupted:
                interrupted = True
                # The tool call is announced before its command runs: wait for the process.
                for _ in range(1000):
                    if sleep_started(marker):
                        break
                    await asyncio.sleep(0.02)
                summary["notes"]["sleeping_before_interrupt"] = sleep_started(marker)
                await client.interrupt()
    summary["notes"]["sleeping_after"] = sleeping(marker)


async def controls():
    """A session switched by control requests before its prompt: the permission mode, the model,
    the MCP servers' status."""
    async with ClaudeSDKClient(options()) as client:
        await client.set_permission_mode("acceptEdits")
        await client.set_model(os.environ["SDK_OTHER_MODEL"])
        summary["notes"]["mcp_status"] = await client.get_mcp_status()
        info = await client.get_server_info()
        summary["notes"]["commands"] = info.get("commands") if info else None
        await client.query("say hi")
        async for message in client.receive_response():
            see(message)


async def subagent():
    """A subagent's run: its messages carry the id of the call that started it."""
    await run("have a subagent look around", permission_mode="bypassPermissions")


async def agents():
    """An agent defined by the caller (initialize's agents), which the model then starts."""
    reviewer = AgentDefinition(
        description="Reviews code read-only",
        prompt="You are REVIEWER-PROMPT.",
        tools=["Read", "Grep"],
    )
    await run(
        "have the reviewer look",
        permission_mode="bypassPermissions",
        agents={"reviewer": reviewer},
    )


async def system_prompt():
    """A system prompt of the caller's, then Claude Code's preset with a line appended."""
    await run("who are you?", system_prompt="You are PIRATE-PROMPT.")
    preset = {"type": "preset", "preset": "claude_code", "append": "APPENDED-LINE"}
    await run("and now?", system_prompt=preset)


async def resume():
    """A first run, then a second that resumes its session."""
    await run("remember the word pelican")
    session_id = summary["results"][0]["session_id"] if summary["results"] else None
    summary["notes"]["first_session_id"] = session_id
    await run("which word?", resume=session_id)


async def fork():
    """A first run, a fork of it, then the newest session of the directory continued."""
    await run("remember the word pelican")
    session_id = summary["results"][0]["session_id"] if summary["results"] else None
    await run("fork it", resume=session_id, fork_session=True)
    await run("and continue", continue_conversation=True)


async def json_schema():
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    await run("what is 6 times 7?", output_format={"type": "json_schema", "schema": schema})


async def max_turns():
    await run("list the files, then explain", max_turns=1, permission_mode="bypassPermissions")


async def budget():
    await run(
        "do something expensive", max_budget_usd=0.0001, permission_mode="bypassPermissions"
    )


SCENARIOS = {
    "plain": plain,
    "bench": bench,
    "permissions": permissions,
    "grants": grants,
    "partial": partial,
    "hook": hook,
    "hook_failure": hook_failure,
    "turn_hooks": turn_hooks,
    "sdk_mcp": sdk_mcp,
    "external_mcp": external_mcp,
    "interrupt": interrupt,
    "controls": controls,
    "subagent": subagent,
    "agents": agents,
    "system_prompt": system_prompt,
    "resume": resume,
    "fork": fork,
    "json_schema": json_schema,
    "max_turns": max_turns,
    "budget": budget,
}


def finish(code):
    summary["stderr"] = summary["stderr"][-4000:]
    print(json.dumps({"summary": summary}, default=str), flush=True)
    # The SDK's transport may still hold threads; the summary is out, so leave at once.
    os._exit(code)


async def main():
    body = SCENARIOS.get(scenario)
    if body is None:
        summary["error"] = f"unknown scenario {scenario}"
        finish(2)
    timeout = int(os.environ.get("DRIVE_TIMEOUT_MS", "90000")) / 1000
    try:
        await asyncio.wait_for(body(), timeout)
    except asyncio.TimeoutError:
        summary["error"] = f"the run did not end within {timeout} s"
        finish(1)
    except Exception:  # noqa: BLE001 - every failure is reported in the summary
        summary["error"] = traceback.format_exc()
    finish(0)


asyncio.run(main())
