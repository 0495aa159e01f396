//! Long sessions never die at the window: a task whose tool outputs add up to twice the window
//! finishes through automatic compactions, every request fits, the log validates and rebuilds
//! every request, a resumed session stays within the window, and `sessions compact` compacts
//! by hand.

use std::path::{Path, PathBuf};

use codecoder_test_support::{FakeModelServer, RecordedRequest, Reply, Script};
use serde_json::{Value, json};

use crate::exec::{Run, openai_env};
use crate::{stderr, stdout};

/// The model's window in these tests.
const WINDOW: u64 = 20_000;

/// Steps of the task, each reading one file.
const STEPS: usize = 8;

/// A home whose config gives `fake-model` a 20k window, a user HOME whose Claude settings run
/// a PreCompact hook that records its input, and a project with eight ~5k-token files.
struct Setup {
    home: tempfile::TempDir,
    user_home: tempfile::TempDir,
    cwd: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let setup = Self {
            home: tempfile::tempdir().unwrap(),
            user_home: tempfile::tempdir().unwrap(),
            cwd: tempfile::tempdir().unwrap(),
        };
        std::fs::write(
            setup.home.path().join("config.toml"),
            format!(
                "model = \"fake-model\"\n[models.fake-model]\ncontext_window = {WINDOW}\nmax_output_tokens = 2000\n"
            ),
        )
        .unwrap();
        let record = setup.user_home.path().join("pre-compact.jsonl");
        let hook = setup.user_home.path().join("pre-compact.sh");
        std::fs::write(
            &hook,
            format!("#!/bin/sh\ncat >> {}\necho >> {}\n", record.display(), record.display()),
        )
        .unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::create_dir(setup.user_home.path().join(".claude")).unwrap();
        std::fs::write(
            setup.user_home.path().join(".claude/settings.json"),
            json!({ "hooks": { "PreCompact": [{ "matcher": "auto|manual", "hooks": [
                { "type": "command", "command": hook.to_string_lossy() }
            ] }] } })
            .to_string(),
        )
        .unwrap();
        for step in 1..=STEPS {
            let text: String = (0..450)
                .map(|line| {
                    format!("file {step} line {line:04}: the quick brown fox {}\n", line * 7)
                })
                .collect();
            std::fs::write(setup.cwd.path().join(format!("part{step}.txt")), text).unwrap();
        }
        setup
    }

    fn run(&self, server: &FakeModelServer, args: &[&str]) -> std::process::Output {
        let mut env = openai_env(server);
        env.push(("HOME".into(), self.user_home.path().to_string_lossy().into_owned()));
        Run { home: self.home.path(), cwd: self.cwd.path(), env }.run(args, "")
    }

    fn log(&self) -> PathBuf {
        let logs: Vec<PathBuf> = std::fs::read_dir(self.home.path().join("sessions"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().and_then(|e| e.to_str()) == Some("jsonl"))
            .collect();
        assert_eq!(logs.len(), 1, "{logs:?}");
        logs.into_iter().next().unwrap()
    }

    fn hook_inputs(&self) -> Vec<Value> {
        let path = self.user_home.path().join("pre-compact.jsonl");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// Eight steps each reading one file, then a final answer; summary requests (no tools) get a
/// summary without taking a step.
fn task_script() -> Script {
    let mut script = Script::new();
    for step in 1..=STEPS {
        script = script.reply(Reply::text(format!("Reading part {step}.")).and_tool_call(
            format!("call_{step}"),
            "read_file",
            json!({"path": format!("part{step}.txt")}),
        ));
    }
    script
        .reply(Reply::text("All eight parts are read."))
        .when_no_tools(Reply::text("Progress: reading the parts in order; the rest remains."))
}

fn has_tools(request: &RecordedRequest) -> bool {
    request.body.get("tools").and_then(Value::as_array).is_some_and(|tools| !tools.is_empty())
}

/// Every request fits the window, by the estimator the context check uses (on the whole body,
/// an overestimate).
fn assert_within_window(requests: &[RecordedRequest]) {
    for (index, request) in requests.iter().enumerate() {
        let tokens = codecoder_context::count_tokens(&request.raw_body);
        assert!(tokens <= WINDOW, "request {} has ~{tokens} tokens", index + 1);
    }
}

#[test]
fn a_task_twice_the_window_finishes_through_automatic_compaction() {
    let setup = Setup::new();
    let server = FakeModelServer::start(task_script()).unwrap();
    let out = setup.run(&server, &["exec", "--json", "read the eight parts in order"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    let summaries = requests.iter().filter(|request| !has_tools(request)).count();
    assert!(summaries >= 1, "no summary request among {} requests", requests.len());
    assert_eq!(server.remaining_steps(), 0, "every scripted step was played");
    assert_eq!(requests.len() - summaries, STEPS + 1);
    assert_within_window(&requests);

    // Every step ran exactly once, in order.
    let log = setup.log();
    let text = std::fs::read_to_string(&log).unwrap();
    let results: Vec<String> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["type"] == "tool_result")
        .map(|record| record["result"]["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = (1..=STEPS).map(|step| format!("call_{step}")).collect();
    assert_eq!(results, expected);
    assert!(text.contains("\"type\":\"compaction\""));

    // The JSON stream says so, as a codex-style item.
    let compactions: Vec<Value> = stdout(&out)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| {
            line["type"] == "item.completed" && line["item"]["type"] == "context_compaction"
        })
        .collect();
    assert_eq!(compactions.len(), summaries, "{}", stdout(&out));
    assert_eq!(compactions[0]["item"]["trigger"], "auto");
    assert_eq!(compactions[0]["item"]["summarized"], true);

    // The PreCompact hook saw the trigger.
    let inputs = setup.hook_inputs();
    assert_eq!(inputs.len(), summaries);
    assert_eq!(inputs[0]["hook_event_name"], "PreCompact");
    assert_eq!(inputs[0]["trigger"], "auto");

    // The log validates and rebuilds every request byte for byte.
    let log_arg = log.to_str().unwrap();
    let out = setup.run(&server, &["sessions", "validate", log_arg]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    for (number, sent) in requests.iter().enumerate() {
        let number = (number + 1).to_string();
        let out = setup.run(&server, &["sessions", "show", log_arg, "--request", &number]);
        assert!(out.status.success(), "#{number}: {}", stderr(&out));
        assert_eq!(stdout(&out), sent.raw_body, "request {number}");
    }

    // A fork copies the compactions and rebuilds the same requests.
    let out = setup.run(&server, &["sessions", "fork", log_arg]);
    assert!(out.status.success(), "{}", stderr(&out));
    let fork = stdout(&out).trim().to_owned();
    let last = requests.len().to_string();
    let out = setup.run(&server, &["sessions", "show", &fork, "--request", &last]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), requests[requests.len() - 1].raw_body);

    // A resumed session (the fork, the newest) sends a history within the window.
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::text("Still here."))
            .when_no_tools(Reply::text("Progress: all parts read.")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "resume", "--last", "what is left?"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_within_window(&server.requests());
}

#[test]
fn the_pre_compact_hook_runs_beside_installed_skills() {
    // Skills (and plan mode) wrap the user's hooks; every hook still reaches them.
    let setup = Setup::new();
    let skill = setup.user_home.path().join(".claude/skills/notes");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: notes\ndescription: Takes notes.\n---\nWrite notes.\n",
    )
    .unwrap();
    let server = FakeModelServer::start(task_script()).unwrap();
    let out = setup.run(&server, &["exec", "--json", "read the eight parts in order"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summaries = server.requests().iter().filter(|request| !has_tools(request)).count();
    assert!(summaries >= 1, "no summary request");
    let inputs = setup.hook_inputs();
    assert_eq!(inputs.len(), summaries, "the PreCompact hook ran for each compaction");
    assert_eq!(inputs[0]["trigger"], "auto");
}

#[test]
fn a_failed_summary_trims_the_history_instead_of_failing_the_turn() {
    let setup = Setup::new();
    let script = task_script();
    let script = Script {
        when_no_tools: Some(Box::new(codecoder_test_support::Fault::status(400).into())),
        ..script
    };
    let server = FakeModelServer::start(script).unwrap();
    let out = setup.run(&server, &["exec", "--json", "read the eight parts in order"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_within_window(&server.requests());
    let trimmed = stdout(&out)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["item"]["type"] == "context_compaction")
        .inspect(|line| assert_eq!(line["item"]["summarized"], false, "{line}"))
        .count();
    assert!(trimmed >= 1, "{}", stdout(&out));
    let log = setup.log();
    let out = setup.run(&server, &["sessions", "validate", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

/// A log's last compaction record, if any.
fn last_compaction(log: &Path) -> Option<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .rfind(|record| record["type"] == "compaction")
}

#[test]
fn sessions_compact_compacts_by_hand_with_a_focus() {
    let setup = Setup::new();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::text("Reading.").and_tool_call(
                "call_1",
                "read_file",
                json!({"path": "part1.txt"}),
            ))
            .reply(Reply::text("Read it."))
            .when_no_tools(Reply::text("Progress: part 1 read.")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "read part 1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = setup.log();
    let log_arg = log.to_str().unwrap();
    let out = setup.run(&server, &["sessions", "compact", log_arg, "--focus", "the parts read"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let summary_request = server.requests().into_iter().last().unwrap();
    assert!(!has_tools(&summary_request));
    assert!(summary_request.raw_body.contains("Focus the summary on: the parts read"));
    let compaction = last_compaction(&log).expect("a compaction record");
    let history = compaction["history"].to_string();
    assert!(history.contains("Progress: part 1 read."), "{history}");
    assert!(history.contains("read part 1"), "the user's message is kept: {history}");
    assert!(history.contains("part1.txt"), "the file read is carried over: {history}");
    let inputs = setup.hook_inputs();
    assert_eq!(inputs.last().unwrap()["trigger"], "manual");
    assert_eq!(inputs.last().unwrap()["custom_instructions"], "the parts read");
    let out = setup.run(&server, &["sessions", "validate", log_arg]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn resuming_a_session_larger_than_the_window_compacts_before_the_turn() {
    let setup = Setup::new();
    // The task runs with a window large enough to need no compaction…
    let big = ["-c", "models.fake-model.context_window=100000"];
    let server = FakeModelServer::start(task_script()).unwrap();
    let out = setup.run(&server, &[&big[..], &["exec", "read the eight parts in order"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(server.requests().iter().all(has_tools), "no compaction with the large window");
    // …and is resumed with the 20k window: its history (~40k tokens) no longer fits, and the
    // summary request is trimmed (the oldest tool outputs dropped) to fit.
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::text("Still here."))
            .when_no_tools(Reply::text("Progress: all eight parts read.")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "resume", "--last", "what is left?"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert_within_window(&requests);
    assert_eq!(requests.len(), 2, "a summary request, then the turn's");
    assert!(!has_tools(&requests[0]));
    assert!(requests[0].raw_body.contains("tool output dropped to fit the summary request"));
    assert!(requests[1].raw_body.contains("Progress: all eight parts read."));
    assert!(requests[1].raw_body.contains("what is left?"));
    let log = setup.log();
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        text.matches("\"type\":\"compaction\"").count(),
        2,
        "the trimmed history, then the replacement"
    );
    let log_arg = log.to_str().unwrap();
    for (number, sent) in requests.iter().enumerate() {
        let total = requests_before_compaction(&text) + number + 1;
        let out =
            setup.run(&server, &["sessions", "show", log_arg, "--request", &total.to_string()]);
        assert!(out.status.success(), "#{total}: {}", stderr(&out));
        assert_eq!(stdout(&out), sent.raw_body, "request {total}");
    }
}

/// The requests of the first run (its `step_start` records before the first compaction).
fn requests_before_compaction(log: &str) -> usize {
    let first_compaction = log.find("\"type\":\"compaction\"").unwrap();
    log[..first_compaction].matches("\"type\":\"step_start\"").count()
}

#[test]
fn a_log_cut_anywhere_in_a_compaction_validates_and_resumes() {
    let setup = Setup::new();
    let server = FakeModelServer::start(task_script()).unwrap();
    let out = setup.run(&server, &["exec", "read the eight parts in order"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = setup.log();
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // From the summary prompt to the replacement history: every cut a kill -9 could leave.
    let first = lines
        .iter()
        .position(|line| {
            line.contains(codecoder_context::SUMMARY_PROMPT.split(' ').next().unwrap())
                && line.contains("\"type\":\"user_message\"")
        })
        .unwrap();
    let last = lines.iter().position(|line| line.contains("\"type\":\"compaction\"")).unwrap();
    assert!(first < last);
    let cuts = tempfile::tempdir().unwrap();
    for end in first..=last {
        let path = cuts.path().join(format!("cut{end}.jsonl"));
        let mut cut = lines[..=end].join("\n");
        cut.push('\n');
        // A torn half of the next line, as a crash mid-write leaves it.
        cut.push_str(&lines[end + 1][..lines[end + 1].len() / 2]);
        std::fs::write(&path, cut).unwrap();
        let out = setup.run(&server, &["sessions", "validate", path.to_str().unwrap()]);
        assert!(out.status.success(), "cut after line {end}: {}{}", stdout(&out), stderr(&out));
    }
    // Cut right after the summary request's step began: resume repairs and goes on.
    std::fs::write(&log, format!("{}\n", lines[..=first + 1].join("\n"))).unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::text("Resumed."))
            .when_no_tools(Reply::text("Progress: resumed after a crash.")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "resume", "--last", "go on"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_within_window(&server.requests());
    let out = setup.run(&server, &["sessions", "validate", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn chat_completions_and_anthropic_compact_the_same_way() {
    for provider in ["openai-chat", "anthropic"] {
        let setup = Setup::new();
        let server = FakeModelServer::start(task_script()).unwrap();
        let out =
            setup.run(&server, &["exec", "--provider", provider, "read the eight parts in order"]);
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        let requests = server.requests();
        let summaries = requests.iter().filter(|request| !has_tools(request)).count();
        assert!(summaries >= 1, "{provider}");
        assert_eq!(requests.len() - summaries, STEPS + 1, "{provider}");
        assert_within_window(&requests);
        let log = setup.log();
        let log_arg = log.to_str().unwrap();
        let out = setup.run(&server, &["sessions", "validate", log_arg]);
        assert!(out.status.success(), "{provider}: {}{}", stdout(&out), stderr(&out));
        for (number, sent) in requests.iter().enumerate() {
            let number = (number + 1).to_string();
            let out = setup.run(&server, &["sessions", "show", log_arg, "--request", &number]);
            assert!(out.status.success(), "{provider} #{number}: {}", stderr(&out));
            assert_eq!(stdout(&out), sent.raw_body, "{provider}: request {number}");
        }
    }
}

#[test]
fn doctor_shows_each_models_auto_compaction_limit() {
    let setup = Setup::new();
    let config = setup.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[models.big]\ncontext_window = 200000\nauto_compact_token_limit = 150000\n");
    std::fs::write(&config, text).unwrap();
    let server = FakeModelServer::start(Script::new()).unwrap();
    let out = setup.run(&server, &["doctor"]);
    let text = stdout(&out);
    assert!(
        text.contains("fake-model (the model): window 20000, reserve 2000, compacts past 16200"),
        "{text}"
    );
    assert!(text.contains("big: window 200000, reserve 4096, compacts past 150000"), "{text}");
    let out = setup.run(&server, &["-c", "model_auto_compact_token_limit=12000", "doctor"]);
    assert!(stdout(&out).contains("compacts past 12000"), "{}", stdout(&out));
    // Asked about another model, doctor reports for that one.
    let out = setup.run(&server, &["doctor", "-m", "big"]);
    assert!(
        stdout(&out).contains("big (the model): window 200000, reserve 4096, compacts past 150000"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn an_output_larger_than_a_quarter_of_the_window_is_a_head_and_tail_with_a_blob_to_page() {
    let setup = Setup::new();
    // ~118 KB of numbered lines: far more than a quarter of the 20k-token window.
    let big: String = (1..=20_000).map(|n| format!("line {n:05}\n")).collect();
    std::fs::write(setup.cwd.path().join("big.txt"), &big).unwrap();
    let sha = {
        #[allow(clippy::disallowed_methods)] // The test computes the blob's name independently.
        let out = std::process::Command::new("sha256sum")
            .arg(setup.cwd.path().join("big.txt"))
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap().to_owned()
    };
    let blob = setup.home.path().join("sessions/blobs").join(&sha[..2]).join(&sha[2..]);
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({"command": "cat big.txt"})))
            .reply(Reply::tool_call(
                "c2",
                "read_file",
                json!({"path": blob.to_string_lossy(), "offset": 10_000, "limit": 2}),
            ))
            .reply(Reply::text("Seen both ends and the middle."))
            .when_no_tools(Reply::text("Summary.")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "look at big.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests: Vec<RecordedRequest> = server.requests().into_iter().filter(has_tools).collect();
    assert_eq!(requests.len(), 3, "every step ran once");
    let second = &requests[1].raw_body;
    // The head and the tail reach the model, the middle does not, and the note names the blob.
    assert!(second.contains("line 00001") && second.contains("line 20000"), "{second}");
    assert!(!second.contains("line 10000"), "the middle is elided");
    assert!(second.contains(&format!("sha256:{sha}")), "the note names the blob");
    // The output the model sees fits a quarter of the window (at four bytes a token), plus the
    // note.
    let output = requests[1].body["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .and_then(|item| item["output"].as_str())
        .unwrap()
        .to_owned();
    assert!(output.len() <= usize::try_from(WINDOW).unwrap() + 1_000, "{} bytes", output.len());
    // The blob holds the whole output, and read_file pages through it.
    assert_eq!(std::fs::read_to_string(&blob).unwrap(), big);
    let third = &requests[2].raw_body;
    assert!(third.contains("line 10000") && third.contains("line 10001"), "{third}");
    assert_within_window(&requests);
}

/// One small read, then an answer; the first reply reports `input_tokens` of usage.
fn reported_usage_script(input_tokens: u64) -> Script {
    Script::new()
        .reply(
            Reply::text("Reading it.")
                .and_tool_call("call_1", "read_file", json!({"path": "small.txt"}))
                .usage(codecoder_test_support::Usage::tokens(input_tokens, 10)),
        )
        .reply(Reply::text("Done."))
        .when_no_tools(Reply::text("Progress: small.txt was read."))
}

#[test]
fn reported_input_usage_is_the_truth_for_auto_compaction() {
    // The window is 20k with a 2k output reserve: auto-compaction at 16,200 tokens. The
    // history here is a few hundred tokens by the estimate; the provider says the first request
    // alone held 17,000 (a tokenizer or a hidden prompt the estimate cannot see).
    for (reported, compacts) in [(17_000, true), (0, false)] {
        let setup = Setup::new();
        std::fs::write(setup.cwd.path().join("small.txt"), "one line\n").unwrap();
        let server = FakeModelServer::start(reported_usage_script(reported)).unwrap();
        let out = setup.run(&server, &["exec", "--json", "read small.txt"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let requests = server.requests();
        let summaries = requests.iter().filter(|request| !has_tools(request)).count();
        let compactions = stdout(&out)
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|line| {
                line["type"] == "item.completed" && line["item"]["type"] == "context_compaction"
            })
            .inspect(|line| assert_eq!(line["item"]["trigger"], "auto", "{line}"))
            .count();
        if compacts {
            assert_eq!((summaries, compactions), (1, 1), "{}", stdout(&out));
            assert!(!has_tools(&requests[1]), "the summary runs before the second step");
        } else {
            assert_eq!((summaries, compactions), (0, 0), "the estimate alone is far below");
        }
        assert_eq!(requests.len() - summaries, 2);
    }
}
