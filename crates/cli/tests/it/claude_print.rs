//! Claude Code's print mode and flags through the real binary, as `claude -p` scripts use them:
//! usage errors that name the flag, sessions continued, resumed and forked across processes
//! (and refused while another process writes them), `--session-id`, the tool and settings
//! flags, the prompts, and the fallback model. The Agent SDKs' side of the protocol is in
//! `claude_sdk`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};

use codecoder_test_support::{FakeModelServer, Fault, Reply, Script};
use serde_json::{Value, json};

use crate::local::LocalHome;
use crate::{stderr, stdout};

/// A home whose model is the fake server's, and a way to run the binary in its workspace.
struct Print {
    local: LocalHome,
    server: FakeModelServer,
}

impl Print {
    fn new(script: Script) -> Self {
        let server = FakeModelServer::start(script).unwrap();
        let local = LocalHome::new(&server.base_url(), "fake-model", "");
        std::fs::create_dir(local.home.path().join("user")).unwrap();
        Self { local, server }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.local.run().command(args);
        command.env("HOME", self.local.home.path().join("user"));
        command
    }

    /// Starts a stream-json session as the SDKs do, with `args` after their fixed ones; its
    /// stdin and stdout piped.
    fn stream(&self, args: &[&str]) -> std::process::Child {
        let mut all =
            vec!["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"];
        all.extend_from_slice(args);
        self.command(&all)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).stdin(Stdio::null()).output().unwrap()
    }

    /// Runs `args` with `--output-format json`; the result object.
    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.extend(["--output-format", "json"]);
        let out = self.run(&args);
        let text = stdout(&out);
        serde_json::from_str(text.trim())
            .unwrap_or_else(|err| panic!("{err}: {text}\nstderr: {}", stderr(&out)))
    }

    fn sessions(&self) -> usize {
        let dir = self.local.home.path().join("sessions");
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter(|e| {
                        e.as_ref().unwrap().path().extension().is_some_and(|x| x == "jsonl")
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    fn validate(&self, id: &str) {
        let out = self.run(&["sessions", "validate", id]);
        assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    }
}

#[test]
fn flags_it_does_not_know_are_usage_errors_that_name_them() {
    let print = Print::new(Script::new().when_exhausted(Reply::text("hi")));
    for (args, named) in [
        (&["-p", "hi", "--frobnicate"][..], "--frobnicate"),
        (&["-p", "hi", "--output-format", "xml"][..], "xml"),
        (&["-p", "hi", "--max-turns", "zero"][..], "--max-turns"),
        (&["-p", "hi", "--permission-mode", "yolo"][..], "yolo"),
        (&["--input-format", "stream-json", "--output-format", "json"][..], "stream-json"),
        (&["-p", "hi", "--output-format", "stream-json"][..], "--verbose"),
        (&["-p", "hi", "--permission-prompt-tool", "mcp__auth__ask"][..], "stdio"),
        (&["-p", "hi", "--session-id", "not-a-uuid"][..], "not-a-uuid"),
        (&["-p", "hi", "--json-schema", "/nonexistent/schema.json"][..], "/nonexistent"),
        (&["-p", "one", "two"][..], "more than one prompt"),
        (&["-p", ""][..], "no prompt"),
    ] {
        let out = print.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(named), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
    }
    assert!(print.server.requests().is_empty());
    // A flag Claude Code has that changes nothing here is accepted, both token styles.
    let out = print.run(&["-p", "hi", "--max-thinking-tokens=100", "--betas", "x", "--verbose"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hi\n");
}

#[test]
fn help_describes_the_headless_mode() {
    let print = Print::new(Script::new());
    let out = print.run(&["--help"]);
    assert!(out.status.success());
    let help = stdout(&out);
    assert!(help.contains("codecoder -p \"task\""), "{help}");
    assert!(help.contains("--permission-prompt-tool stdio"), "{help}");
}

#[test]
fn continue_resume_and_fork_work_across_processes() {
    let print = Print::new(
        Script::new()
            .reply(Reply::text("noted: pelican"))
            .reply(Reply::text("it was pelican"))
            .reply(Reply::text("forked: pelican"))
            .reply(Reply::text("resumed: pelican")),
    );
    let first = print.json(&["-p", "remember the word pelican"]);
    let id = first["session_id"].as_str().unwrap().to_owned();
    assert_eq!(first["result"], "noted: pelican");

    let continued = print.json(&["-p", "which word?", "--continue"]);
    assert_eq!(continued["session_id"], id.as_str(), "--continue keeps the id");
    assert_eq!(continued["result"], "it was pelican");
    let request = &print.server.requests()[1].raw_body;
    assert!(request.contains("remember the word pelican") && request.contains("noted: pelican"));

    let forked = print.json(&["-p", "and now?", "-r", &id, "--fork-session"]);
    let fork = forked["session_id"].as_str().unwrap();
    assert_ne!(fork, id, "a fork has an id of its own");
    assert!(print.server.requests()[2].raw_body.contains("which word?"));
    assert_eq!(print.sessions(), 2);

    let resumed = print.json(&["-p", "once more", "--resume", &id]);
    assert_eq!(resumed["session_id"], id.as_str());
    let request = &print.server.requests()[3].raw_body;
    assert!(!request.contains("and now?"), "the fork's turn is not in the original: {request}");
    print.validate(&id);
    print.validate(fork);
}

#[test]
fn a_session_another_process_writes_is_refused_not_shared() {
    let print = Print::new(Script::new().when_exhausted(Reply::text("ok")));
    let first = print.json(&["-p", "start"]);
    let id = first["session_id"].as_str().unwrap().to_owned();
    // A stream-json process holds the session while its input is open.
    let mut holder = print.stream(&["--resume", &id]);
    let mut stdin = holder.stdin.take().unwrap();
    let init = json!({"type": "control_request", "request_id": "r1", "request": {"subtype": "initialize"}});
    writeln!(stdin, "{init}").unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let answer: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(answer["response"]["subtype"], "success", "{answer}");

    let out = print.run(&["-p", "me too", "--resume", &id]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("in use by another"), "{}", stderr(&out));

    drop(stdin);
    assert!(holder.wait().unwrap().success());
    print.validate(&id);
}

#[test]
fn session_id_names_a_new_session_once() {
    let print = Print::new(Script::new().when_exhausted(Reply::text("ok")));
    let id = "3f6c2a1e-8d4b-4c7a-9e2f-1b5d6a7c8e9f";
    let result = print.json(&["-p", "hi", "--session-id", id]);
    assert_eq!(result["session_id"], id);
    assert!(print.local.home.path().join("sessions").join(format!("{id}.jsonl")).exists());
    let again = print.run(&["-p", "hi", "--session-id", id]);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(stderr(&again).contains("already in use"), "{}", stderr(&again));
    let with_resume = print.run(&["-p", "hi", "--session-id", id, "--continue"]);
    assert_eq!(with_resume.status.code(), Some(2));
    print.validate(id);
}

#[test]
fn tools_and_rules_limit_what_the_model_may_use() {
    let print = Print::new(
        Script::new()
            .reply(Reply::tool_call("call_1", "run_command", json!({"command": "echo hi"})))
            .reply(Reply::text("could not")),
    );
    // Only Read and Grep are offered.
    let out =
        print.run(&["-p", "x", "--tools", "Read,Grep", "--output-format=stream-json", "--verbose"]);
    let init: Value = stdout(&out)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|frame| frame["subtype"] == "init")
        .unwrap();
    let tools: Vec<&str> =
        init["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"Read") && tools.contains(&"Grep"), "{tools:?}");
    for absent in ["Bash", "Write", "Edit", "Glob"] {
        assert!(!tools.contains(&absent), "{absent} offered: {tools:?}");
    }
    let offered = &print.server.requests()[0].body["tools"];
    let names: Vec<&str> =
        offered.as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(names.contains(&"read_file") && !names.contains(&"run_command"), "{names:?}");

    // A denied tool is refused and said so in the result.
    let print = Print::new(
        Script::new()
            .reply(Reply::tool_call("call_1", "run_command", json!({"command": "touch made.txt"})))
            .reply(Reply::text("it was refused")),
    );
    let result = print.json(&["-p", "make it", "--disallowedTools", "Bash(touch:*)"]);
    assert_eq!(result["result"], "it was refused");
    assert_eq!(result["permission_denials"][0]["tool_name"], "Bash", "{result}");
    assert_eq!(result["permission_denials"][0]["tool_input"]["command"], "touch made.txt");
    assert!(!print.local.cwd.path().join("made.txt").exists());
    let sent = &print.server.requests()[1].raw_body;
    assert!(sent.contains("denied") || sent.contains("permission"), "{sent}");
}

#[test]
fn settings_flags_choose_claude_codes_settings() {
    let block = |marker: &str| {
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": format!("echo {marker} >&2; exit 2")}
        ]}]}})
    };
    let script = || {
        Script::new()
            .reply(Reply::tool_call("call_1", "run_command", json!({"command": "touch ran.txt"})))
            .reply(Reply::text("done"))
    };
    // `--settings` adds a hook that blocks the command.
    let print = Print::new(script());
    let result = print.json(&["-p", "go", "--settings", &block("from-flag").to_string()]);
    assert_eq!(result["result"], "done");
    assert!(!print.local.cwd.path().join("ran.txt").exists());
    assert!(print.server.requests()[1].raw_body.contains("from-flag"));

    // The user's ~/.claude/settings.json blocks too, unless `--setting-sources` leaves it out.
    let print = Print::new(script().reply(Reply::tool_call(
        "call_2",
        "run_command",
        json!({"command": "touch ran.txt"}),
    )));
    let claude = print.local.home.path().join("user").join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(claude.join("settings.json"), block("from-user").to_string()).unwrap();
    let result = print.json(&["-p", "go", "--setting-sources=project,local"]);
    assert_eq!(result["result"], "done");
    assert!(print.local.cwd.path().join("ran.txt").exists(), "the user's hook was not read");
    std::fs::remove_file(print.local.cwd.path().join("ran.txt")).unwrap();
}

#[test]
fn system_prompt_flags_shape_the_instructions() {
    let print = Print::new(Script::new().when_exhausted(Reply::text("ok")));
    print.json(&["-p", "hi", "--system-prompt", "You are PELICAN-BOT."]);
    print.json(&["-p", "hi", "--append-system-prompt", "Always end with GOODBYE-MARK."]);
    let requests = print.server.requests();
    let system = |i: usize| requests[i].body["messages"][0]["content"].to_string();
    assert!(system(0).contains("PELICAN-BOT"), "{}", system(0));
    assert!(!system(0).contains("codecoder"), "the base instructions are replaced: {}", system(0));
    assert!(system(1).contains("GOODBYE-MARK"), "{}", system(1));
    assert!(system(1).len() > system(0).len(), "appended, not replaced");
}

#[test]
fn a_failing_model_is_asked_again_of_the_fallback_model() {
    let print = Print::new(
        Script::new()
            .reply(Fault::status(404).message("model `fake-model` not found"))
            .reply(Reply::text("the fallback answered")),
    );
    let out = print.run(&["-p", "hi", "--fallback-model", "backup-model"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "the fallback answered\n");
    assert!(stderr(&out).contains("backup-model"), "{}", stderr(&out));
    let requests = print.server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["model"], "fake-model");
    assert_eq!(requests[1].body["model"], "backup-model");
}

#[test]
fn print_modes_errors_go_to_stderr_with_exit_1() {
    let print = Print::new(Script::new().when_exhausted(Fault::status(400).message("bad request")));
    let out = print.run(&["-p", "hi"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(stderr(&out).contains("bad request"), "{}", stderr(&out));
    let result = print.json(&["-p", "hi"]);
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(result["subtype"], "success", "an API failure is Claude's success with is_error");
}

#[test]
fn the_sdk_sees_a_call_before_it_is_asked_about_it_and_its_edit_is_what_runs() {
    let print = Print::new(
        Script::new()
            .reply(Reply::tool_call("call_1", "run_command", json!({"command": "touch asked.txt"})))
            .reply(Reply::text("done")),
    );
    let mut child = print.stream(&["--permission-prompt-tool", "stdio"]);
    let mut stdin = child.stdin.take().unwrap();
    let mut frames = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next =
        move || -> Value { serde_json::from_str(&frames.next().unwrap().unwrap()).unwrap() };
    let send =
        |stdin: &mut std::process::ChildStdin, value: Value| writeln!(stdin, "{value}").unwrap();
    send(
        &mut stdin,
        json!({"type": "control_request", "request_id": "i", "request": {"subtype": "initialize"}}),
    );
    send(&mut stdin, json!({"type": "user", "message": {"role": "user", "content": "make it"}}));
    let mut announced = false;
    let result = loop {
        let frame = next();
        if frame["type"] == "assistant" && frame["message"]["content"][0]["id"] == "call_1" {
            announced = true;
        }
        if frame["type"] == "control_request" && frame["request"]["subtype"] == "can_use_tool" {
            assert!(announced, "can_use_tool before the call's tool_use: {frame}");
            assert_eq!(frame["request"]["tool_name"], "Bash", "{frame}");
            assert_eq!(frame["request"]["input"]["command"], "touch asked.txt", "{frame}");
            send(
                &mut stdin,
                json!({"type": "control_response", "response": {
                    "subtype": "success",
                    "request_id": frame["request_id"],
                    "response": {"behavior": "allow", "updatedInput": {"command": "touch edited.txt"}},
                }}),
            );
        }
        if frame["type"] == "result" {
            break frame;
        }
    };
    assert_eq!(result["subtype"], "success", "{result}");
    assert!(print.local.cwd.path().join("edited.txt").exists(), "the edited command ran");
    assert!(!print.local.cwd.path().join("asked.txt").exists(), "the asked command did not");
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_reader_that_goes_away_ends_the_run_and_frees_the_session() {
    // `codecoder -p … --output-format stream-json | head -1`: the first write after the reader
    // left fails; the run ends (no agent left waiting), and the session can be resumed.
    let print = Print::new(Script::new().when_exhausted(Reply::text("a long answer").chunks(5)));
    let mut child = print
        .command(&["-p", "hi", "--output-format", "stream-json", "--verbose"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let init: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let id = init["session_id"].as_str().unwrap().to_owned();
    drop(lines);
    // A guard against a hang, not a measure.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "codecoder did not exit after its reader left"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let resumed = print.json(&["-p", "again", "--resume", &id]);
    assert_eq!(resumed["session_id"], id.as_str(), "{resumed}");
    print.validate(&id);
}

#[test]
fn dont_ask_refuses_unasked_what_no_rule_allows() {
    let script = || {
        Script::new()
            .reply(Reply::tool_call("call_1", "run_command", json!({"command": "touch made.txt"})))
            .reply(Reply::text("finished"))
    };
    let print = Print::new(script());
    let result = print.json(&["-p", "make it", "--permission-mode", "dontAsk"]);
    assert_eq!(result["result"], "finished", "{result}");
    assert!(!print.local.cwd.path().join("made.txt").exists(), "dontAsk ran it: {result}");
    assert_eq!(result["permission_denials"][0]["tool_input"]["command"], "touch made.txt");
    // Allowed by a rule, it runs.
    let print = Print::new(script());
    let result = print.json(&[
        "-p",
        "make it",
        "--permission-mode",
        "dontAsk",
        "--allowedTools",
        "Bash(touch:*)",
    ]);
    assert!(print.local.cwd.path().join("made.txt").exists(), "{result}");
    assert_eq!(result["permission_denials"], json!([]), "{result}");
}

#[test]
fn an_always_allow_for_the_user_is_written_to_their_settings_and_holds_in_the_next_run() {
    let print = Print::new(
        Script::new()
            .reply(Reply::tool_call("call_1", "run_command", json!({"command": "touch one.txt"})))
            .reply(Reply::text("first done"))
            .reply(Reply::tool_call("call_2", "run_command", json!({"command": "touch two.txt"})))
            .reply(Reply::text("second done")),
    );
    let run = |answer: Option<Value>| -> Vec<Value> {
        let mut child = print.stream(&["--permission-prompt-tool", "stdio"]);
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let init = json!({"type": "control_request", "request_id": "i", "request": {"subtype": "initialize"}});
        writeln!(stdin, "{init}").unwrap();
        writeln!(
            stdin,
            "{}",
            json!({"type": "user", "message": {"role": "user", "content": "go"}})
        )
        .unwrap();
        let mut seen = Vec::new();
        loop {
            let frame: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            seen.push(frame.clone());
            if frame["request"]["subtype"] == "can_use_tool" {
                let response = answer.clone().expect("asked although a rule allows it");
                let reply = json!({"type": "control_response", "response": {
                    "subtype": "success", "request_id": frame["request_id"], "response": response,
                }});
                writeln!(stdin, "{reply}").unwrap();
            }
            if frame["type"] == "result" {
                break;
            }
        }
        drop(stdin);
        assert!(child.wait().unwrap().success());
        seen
    };
    let always = json!({"behavior": "allow", "updatedPermissions": [{
        "type": "addRules",
        "rules": [{"toolName": "Bash", "ruleContent": "touch:*"}],
        "behavior": "allow",
        "destination": "userSettings",
    }]});
    run(Some(always));
    assert!(print.local.cwd.path().join("one.txt").exists());
    let settings = print.local.home.path().join("user/.claude/settings.json");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(written["permissions"]["allow"], json!(["Bash(touch:*)"]), "{written}");
    // The next process reads the user's settings: not asked again.
    run(None);
    assert!(print.local.cwd.path().join("two.txt").exists());
}

#[test]
fn sigint_ends_the_wait_for_an_mcp_server_still_starting() {
    let print = Print::new(Script::new().reply(Reply::text("never asked")));
    // A server that says it started, then never answers `initialize`.
    let marker = print.local.home.path().join("server-started");
    let config = print.local.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[mcp_servers.slow]\ncommand = \"sh\"\nargs = [\"-c\", \"touch '{}'; exec sleep 600\"]\n\
         startup_timeout_sec = 600\n",
        marker.display()
    ));
    std::fs::write(&config, text).unwrap();
    let mut child = print
        .command(&["-p", "hello", "--output-format", "json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded only so that a wait that ignores the signal fails here instead of hanging for the
    // server's ten-minute startup timeout.
    let limit = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !marker.exists() {
        assert!(std::time::Instant::now() < limit, "the MCP server never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > limit {
            let _ = child.kill();
            panic!("claude -p still waits for the MCP server after SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    assert_eq!(print.server.requests().len(), 0, "the model was asked");
}
