//! The web UI of `codecoder serve` in a real headless browser: Debian's `chromium`, driven by
//! a pinned `puppeteer-core` (`tests/web/drive.mjs`), against the real binary serving a temp
//! git repo with the fake model. The page starts a session on the server's project, shows the
//! streamed text with the transcript kept at its end, takes a command's approval and shows its
//! output, keeps a pending approval across a reload and answers it there, shows the edit's
//! diff, searches the list, opens a session named by the address's hash, fits a phone's
//! width, and cancels a slow command with nothing left running; a plan sent back and approved,
//! a question answered, and a page reloaded mid-turn (within and past the events the server
//! keeps) with no request said withdrawn.
//!
//! `.ci/run` installs both and sets `CODECODER_TEST_CHROMIUM` and `CODECODER_TEST_PUPPETEER`;
//! without them the tests are skipped, or fail under `CI=true`. With
//! `CODECODER_WEB_SCREENSHOTS=DIR` the driver also saves the main views there (`docs/` holds
//! the ones the README shows).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codecoder_protocol::env;
use codecoder_test_support::{FakeModelServer, Reply, Script, Usage};
use serde_json::{Value, json};

use crate::exec::{Run, openai_env};

/// How long the whole browser scenario may take.
const PATIENCE: Duration = Duration::from_secs(180);

/// One browser at a time: the tests of this binary run in parallel, and several Chromiums at
/// once on a small machine make every step slow.
static ONE_BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The browser and the driver's npm prefix; `None` when they are not installed (the test is
/// skipped, or fails under `CI=true`).
#[allow(clippy::print_stderr)]
fn browser() -> Option<(std::ffi::OsString, std::ffi::OsString)> {
    let var = |name| std::env::var_os(name).filter(|value| !value.is_empty());
    match (var(env::CODECODER_TEST_CHROMIUM), var(env::CODECODER_TEST_PUPPETEER)) {
        (Some(chromium), Some(puppeteer)) => Some((chromium, puppeteer)),
        _ if std::env::var(env::CI).is_ok_and(|v| v == "true") => panic!(
            "{} and {} must be set: .ci/run installs chromium and puppeteer-core and sets them",
            env::CODECODER_TEST_CHROMIUM,
            env::CODECODER_TEST_PUPPETEER
        ),
        _ => {
            eprintln!(
                "skipped: {} or {} is not set",
                env::CODECODER_TEST_CHROMIUM,
                env::CODECODER_TEST_PUPPETEER
            );
            None
        }
    }
}

/// A git repo holding `notes.txt` (`hello`, `world`).
fn temp_repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("notes.txt"), "hello\nworld\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "notes.txt"],
        &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
    ] {
        let status = Command::new("git").args(args).current_dir(repo.path()).status().unwrap();
        assert!(status.success(), "git {args:?}");
    }
    repo
}

/// A running `codecoder serve`, killed if a test fails before it is stopped (its stderr is the
/// test's: a server left running would hold the test run's output open).
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `codecoder serve` with `args`, started in `run.cwd`; its URL line.
fn serve(run: &Run, args: &[&str]) -> (Served, String) {
    let mut command_args = vec!["serve"];
    command_args.extend_from_slice(args);
    let mut child = run
        .command(&command_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let served = Served(child);
    let mut url = String::new();
    BufReader::new(stdout).read_line(&mut url).unwrap();
    let url = url.trim_end().to_owned();
    assert!(url.starts_with("http://127.0.0.1:") && url.contains("/?token="), "{url}");
    (served, url)
}

/// Stops the server as Ctrl-C does and waits for it.
fn stop(mut served: Served) {
    let child = &mut served.0;
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the server did not stop on SIGINT");
}

/// Runs the driver's `scenario` against `url`; its summary, which must have no error.
#[allow(clippy::print_stderr)]
fn drive(
    (chromium, puppeteer): &(std::ffi::OsString, std::ffi::OsString),
    scenario: &str,
    url: &str,
    extra: &[(&str, &str)],
) -> Value {
    let _one = ONE_BROWSER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web/drive.mjs");
    let home = tempfile::tempdir().unwrap();
    let mut command = Command::new("node");
    command
        .arg(driver)
        .arg(scenario)
        .arg(url)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env(env::CODECODER_TEST_CHROMIUM, chromium)
        .env(env::CODECODER_TEST_PUPPETEER, puppeteer)
        .env("DRIVE_TIMEOUT_MS", PATIENCE.as_millis().to_string());
    if let Some(dir) = std::env::var_os(env::CODECODER_WEB_SCREENSHOTS) {
        command.env(env::CODECODER_WEB_SCREENSHOTS, dir);
    }
    for (key, value) in extra {
        command.env(key, value);
    }
    let output = command.stderr(Stdio::inherit()).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|line| line.get("summary").cloned())
        .unwrap_or_else(|| panic!("no summary from the driver: {stdout}"));
    // Shown with `--nocapture`: what the page showed, step by step.
    eprintln!("{scenario}: {summary}");
    assert_eq!(summary["error"], Value::Null, "the browser scenario failed: {summary:#}");
    let errors: Vec<&Value> = summary["console"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|line| line.as_str().is_some_and(|line| line.starts_with("pageerror")))
        .collect();
    assert!(errors.is_empty(), "the page's script failed: {summary:#}");
    assert!(output.status.success(), "{summary:#}");
    summary
}

#[test]
fn the_page_runs_a_session_with_approvals_across_a_reload_and_fits_a_phone() {
    let Some(browser) = browser() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = temp_repo();
    // Longer than the screen: the transcript must follow it to its end.
    let lines: Vec<String> =
        (1..=60).map(|n| format!("Line {n} of a reply longer than the screen.")).collect();
    let first = format!(
        "Let me look first. <img src=x onerror=alert(1)>\n\n```rust\nfn main() {{ let x = 1; }}\n```\n\n{}",
        lines.join("\n\n")
    );
    let script = Script::new()
        .reply(Reply::text(first).chunks(4).reasoning("The person wants a change.").and_tool_call(
            "c1",
            "run_command",
            json!({"command": "touch approved.txt && echo made-it"}),
        ))
        .reply(Reply::tool_call(
            "c2",
            "edit",
            json!({"path": "notes.txt", "old_string": "world", "new_string": "there"}),
        ))
        .reply(Reply::text("All done: **notes.txt** says `there`.").usage(Usage::tokens(1500, 40)));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    // `untrusted` asks for the command and the edit, as it would in the TUI.
    let (child, url) =
        serve(&run, &["-a", "untrusted", "-s", "danger-full-access", "-m", "test-model"]);
    let summary = drive(&browser, "main", &url, &[]);
    stop(child);
    let notes = &summary["notes"];
    let t = format!("{summary:#}");

    // The page opened on the server's project, the token gone from the address.
    let repo_path = std::fs::canonicalize(repo.path()).unwrap();
    assert_eq!(notes["project"], json!(repo_path.to_str().unwrap()), "{t}");
    assert!(!notes["address"].as_str().unwrap().contains("token"), "{t}");
    // The streamed text, rendered: markdown with highlighted code, the reasoning folded.
    assert!(
        notes["streamed"].as_str().unwrap().contains("Let me look first. <img src=x onerror"),
        "{t}"
    );
    assert_eq!(notes["injected"], 0, "the model's markup became elements: {t}");
    assert!(notes["codeHighlighted"].as_u64() > Some(0), "{t}");
    assert_eq!(notes["reasoningFolded"], true, "{t}");
    assert_eq!(notes["userBubble"], "Make the change, please", "{t}");
    // The command's approval showed the command and why the person was asked.
    let command = &notes["commandApproval"];
    assert_eq!(command["command"], "$ touch approved.txt && echo made-it", "{t}");
    assert!(command["reason"].as_str().unwrap().contains("untrusted"), "{t}");
    assert_eq!(notes["commandCard"]["output"], "made-it\n", "{t}");
    assert!(notes["commandCard"]["badge"].as_str().unwrap().starts_with("exit 0"), "{t}");
    // The edit's approval, with its diff, was the same request after the reload.
    assert_eq!(notes["editApproval"]["removed"], json!(["-world\n"]), "{t}");
    assert_eq!(notes["editApproval"]["added"], json!(["+there\n"]), "{t}");
    assert_eq!(notes["editApprovalAfterReload"]["id"], notes["editApproval"]["id"], "{t}");
    assert_eq!(notes["userBubbleAfterReload"], "Make the change, please", "{t}");
    assert_eq!(notes["editCard"]["title"], "Edit notes.txt", "{t}");
    assert_eq!(notes["editCard"]["added"], json!(["+there\n"]), "{t}");
    assert_eq!(notes["pendingLeft"], 0, "{t}");
    assert_eq!(notes["withdrawn"], json!([]), "{t}");
    // A reply longer than the screen, an approval box below it, a reloaded page: the
    // transcript shows its end.
    assert_eq!(notes["endAtApproval"]["atEnd"], true, "{t}");
    assert_eq!(notes["endAfterReload"]["atEnd"], true, "{t}");
    // Only the address's hash changed: the page opened that session.
    assert_eq!(notes["openedByHash"], "Send", "{t}");
    // The turn's tokens, from the usage events, and the context the last request took.
    assert!(notes["usage"].as_str().unwrap().starts_with("1.5k in · 40 out · context 1.5k"), "{t}");
    // Both calls ran, each once approved.
    assert!(repo.path().join("approved.txt").exists(), "{t}");
    assert_eq!(std::fs::read_to_string(repo.path().join("notes.txt")).unwrap(), "hello\nthere\n");
    // Completion where the server offers it.
    if notes["filesRoute"] == 200 {
        assert!(notes["completions"].as_array().unwrap().contains(&json!("notes.txt")), "{t}");
        assert_eq!(notes["completed"], "look at @notes.txt ", "{t}");
    }
    if notes["commandsRoute"] == 200 {
        assert!(notes["slashCommands"].as_array().is_some_and(|c| !c.is_empty()), "{t}");
    }
    // The list found the session by its title.
    assert_eq!(notes["listed"].as_array().unwrap().len(), 1, "{t}");
    assert!(notes["listed"][0].as_str().unwrap().starts_with("Make the change"), "{t}");
    // A phone: nothing wider than the screen, the list and the composer on it.
    for view in ["phone", "phoneSession"] {
        assert_eq!(notes[view]["scrollWidth"], 375, "{t}");
        assert_eq!(notes[view]["wide"], json!([]), "{t}");
    }
    assert_eq!(notes["phoneVisible"], json!({"list": true, "prompt": true, "send": true}), "{t}");
}

#[test]
fn the_page_cancels_a_slow_command_and_leaves_no_process() {
    let Some(browser) = browser() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = temp_repo();
    // A duration no other process on the machine uses, to find ours in /proc.
    let marker = format!("{}.{}", 50 + std::process::id() % 9, std::process::id() % 1000 + 13);
    let script = Script::new()
        .reply(Reply::tool_call("c1", "run_command", json!({"command": format!("sleep {marker}")})))
        // Only reached if the cancel loses a race with the next request; cut off then.
        .reply(Reply::text("too late").delay_ms(3000));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    let (child, url) =
        serve(&run, &["-a", "never", "-s", "danger-full-access", "-m", "test-model"]);
    let summary = drive(&browser, "cancel", &url, &[("SLEEP_MARKER", &marker)]);
    let t = format!("{summary:#}");
    assert!(summary["notes"]["sleepingBeforeCancel"].as_u64() >= Some(1), "{t}");
    assert_eq!(summary["notes"]["cancelVisible"], true, "{t}");
    assert!(summary["notes"]["card"]["classes"].as_str().unwrap().contains("cancelled"), "{t}");
    assert!(summary["steps"].as_array().unwrap().contains(&json!("steered")), "{t}");
    let deadline = Instant::now() + PATIENCE;
    while sleeping(&marker) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(sleeping(&marker), 0, "the cancelled command is still running: {t}");
    stop(child);
}

/// Processes running `sleep MARKER`.
fn sleeping(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.unwrap().path().join("cmdline")).ok())
        .filter(|cmdline| {
            String::from_utf8_lossy(cmdline).replace('\0', " ").contains(&format!("sleep {marker}"))
        })
        .count()
}

#[test]
fn the_page_starts_in_plan_mode_sends_a_plan_back_and_approves_the_next() {
    let Some(browser) = browser() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = temp_repo();
    let script = Script::new()
        .reply(Reply::tool_call(
            "p1",
            "exit_plan_mode",
            json!({"plan": "# The plan\n\n1. Read notes.txt\n2. Change `world`"}),
        ))
        .reply(Reply::tool_call(
            "p2",
            "exit_plan_mode",
            json!({"plan": "1. Read notes.txt\n2. Change `world`\n3. Add a test"}),
        ))
        .reply(Reply::text("Carrying out the plan."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    let (child, url) =
        serve(&run, &["-a", "on-request", "-s", "workspace-write", "-m", "test-model"]);
    let summary = drive(&browser, "plan", &url, &[]);
    stop(child);
    let notes = &summary["notes"];
    let t = format!("{summary:#}");
    assert_eq!(notes["firstPlan"]["items"], json!(["Read notes.txt", "Change world"]), "{t}");
    assert_eq!(notes["firstPlan"]["buttons"], json!(["Approve", "Keep planning"]), "{t}");
    assert_eq!(notes["secondPlan"], json!(["Read notes.txt", "Change world", "Add a test"]), "{t}");
    assert_eq!(notes["reviewsLeft"], 0, "{t}");
    // Approved, the plan took the session out of plan mode.
    assert_eq!(notes["planMode"], false, "{t}");
    // The model was asked in plan mode, got the feedback, then the approval.
    let requests = server.requests();
    let bodies: Vec<&str> = requests.iter().map(|r| r.raw_body.as_str()).collect();
    assert_eq!(bodies.len(), 3, "{t}");
    assert!(bodies[0].contains("exit_plan_mode"), "plan mode was not on: {}", bodies[0]);
    assert!(bodies[1].contains("Also add a test"), "{}", bodies[1]);
    assert!(bodies[2].contains("The user approved the plan"), "{}", bodies[2]);
}

#[test]
fn a_page_reloaded_past_the_events_the_server_keeps_draws_them_from_the_log_once() {
    let Some(browser) = browser() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = temp_repo();
    let script = Script::new()
        .reply(Reply::text("First answer.").chunks(6))
        .reply(Reply::tool_call("g1", "run_command", json!({"command": "touch gap.txt"})))
        .reply(Reply::text("Second answer."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    let (child, url) = serve(
        &run,
        &["-a", "untrusted", "-s", "danger-full-access", "-m", "test-model", "--max-events", "8"],
    );
    let summary = drive(&browser, "gap", &url, &[]);
    stop(child);
    let notes = &summary["notes"];
    let t = format!("{summary:#}");
    assert_eq!(notes["gapSeen"], true, "the server kept every event: no gap to read: {t}");
    two_turns_across_a_reload(&summary, repo.path());
}

#[test]
fn a_page_reloaded_while_the_second_turn_waits_says_no_request_was_withdrawn() {
    let Some(browser) = browser() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = temp_repo();
    let script = Script::new()
        .reply(Reply::text("First answer.").chunks(6))
        .reply(Reply::tool_call("g1", "run_command", json!({"command": "touch gap.txt"})))
        .reply(Reply::text("Second answer."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    // Every event kept: the reloaded page's stream replays the first turn's end while the
    // second's approval is pending.
    let (child, url) =
        serve(&run, &["-a", "untrusted", "-s", "danger-full-access", "-m", "test-model"]);
    let summary = drive(&browser, "gap", &url, &[]);
    stop(child);
    assert_eq!(summary["notes"]["gapSeen"], false, "{summary:#}");
    two_turns_across_a_reload(&summary, repo.path());
}

/// The `gap` scenario's page: each turn once, the approval the same request after the reload,
/// and no request said withdrawn.
fn two_turns_across_a_reload(summary: &Value, repo: &Path) {
    let notes = &summary["notes"];
    let t = format!("{summary:#}");
    assert_eq!(notes["sameRequest"], true, "{t}");
    assert_eq!(notes["users"], json!(["first", "second"]), "{t}");
    assert_eq!(notes["agents"], json!(["First answer.", "Second answer."]), "{t}");
    assert_eq!(notes["cards"], json!(["Run `touch gap.txt`"]), "{t}");
    assert_eq!(notes["withdrawn"], json!([]), "{t}");
    assert!(repo.join("gap.txt").exists(), "{t}");
}

#[test]
fn the_page_shows_the_models_question_and_sends_a_typed_answer() {
    let Some(browser) = browser() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = temp_repo();
    let script = Script::new()
        .reply(Reply::tool_call(
            "q1",
            "ask_user",
            json!({"question": "Which color should the button be?", "options": ["red", "blue"]}),
        ))
        .reply(Reply::text("Green it is."))
        .reply(Reply::text("A green border too."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    let (child, url) = serve(&run, &["-m", "test-model"]);
    let summary = drive(&browser, "question", &url, &[]);
    stop(child);
    let notes = &summary["notes"];
    let t = format!("{summary:#}");
    assert_eq!(notes["question"]["text"], "Which color should the button be?", "{t}");
    assert_eq!(notes["question"]["buttons"], json!(["red", "blue", "Decline"]), "{t}");
    assert_eq!(notes["questionsLeft"], 0, "{t}");
    let requests = server.requests();
    assert!(requests[1].raw_body.contains("green, please"), "the answer did not reach the model");
    // Closed, the session was drawn from its log; resumed, its next turn came live.
    assert_eq!(notes["closed"], 200, "{t}");
    assert_eq!(notes["fromLog"]["users"], json!(["style it"]), "{t}");
    assert_eq!(notes["fromLog"]["agents"], json!(["Green it is."]), "{t}");
    assert_eq!(notes["fromLog"]["send"], "Resume with this", "{t}");
    assert_eq!(notes["resumed"]["users"], json!(["style it", "and the border?"]), "{t}");
    assert_eq!(notes["resumed"]["send"], "Send", "{t}");
    assert!(requests[2].raw_body.contains("Green it is."), "the resumed turn lost the history");

    // The renderer escapes first: markup stays text, only http(s) links become links.
    let md = |key: &str| notes["markdown"][key].as_str().unwrap().to_owned();
    assert_eq!(md("tags"), "<p>&lt;b&gt;x&lt;/b&gt; &lt;script&gt;alert(1)&lt;/script&gt;</p>");
    assert!(!md("scriptLink").contains("<a"), "{}", md("scriptLink"));
    assert_eq!(
        md("link"),
        r#"<p><a href="https://x.test/" target="_blank" rel="noopener noreferrer">a</a></p>"#
    );
    assert!(!md("quoteInLink").contains(r#""onmouseover"#), "{}", md("quoteInLink"));
    assert_eq!(md("inline"), "<p><strong>b</strong> <em>i</em> <code>c &lt;d&gt;</code></p>");
    let code = md("code");
    for class in ["hl-keyword", "hl-string", "hl-comment"] {
        assert!(code.contains(class), "{code}");
    }
    assert!(code.starts_with(r#"<pre class="code" data-lang="js">"#), "{code}");
    assert_eq!(
        md("list"),
        r#"<ul><li>one</li><li class="task">☑ two</li></ul><ol><li>three</li></ol>"#
    );
    // A table: its cells escaped and rendered inline, `\|` a bar in a cell.
    assert_eq!(
        md("table"),
        "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>&lt;x&gt;</td>\
         <td><code>c | d</code></td></tr></tbody></table><p>after</p>"
    );
}
