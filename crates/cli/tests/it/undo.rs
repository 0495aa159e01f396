//! Checkpoints and undo end to end: a fake-model turn edits, creates and (through commands)
//! deletes and `sed -i`s files in a git repository; `codecoder sessions undo` restores them byte
//! for byte, refuses a file changed since outside codecoder unless `--force`, and takes several
//! turns back at once with `--turn N`. A log cut anywhere in a checkpoint or rewind still loads.

use std::path::PathBuf;
use std::process::Command;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::exec::{Run, openai_env};
use crate::{stderr, stdout};

/// A home and a git repository holding three files.
struct Repo {
    home: tempfile::TempDir,
    repo: tempfile::TempDir,
}

impl Repo {
    fn new() -> Self {
        let repo = Self { home: tempfile::tempdir().unwrap(), repo: tempfile::tempdir().unwrap() };
        let status = Command::new("git")
            .args(["init", "-q"])
            .current_dir(repo.repo.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success());
        repo.write("edit.txt", "one\ntwo\nthree\n");
        repo.write("gone.txt", "to be deleted\n");
        repo.write("sed.txt", "alpha\nbeta\n");
        repo.write("patch.txt", "before the patch\n");
        repo
    }

    fn path(&self, name: &str) -> PathBuf {
        self.repo.path().join(name)
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text).unwrap();
    }

    fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.path(name)).ok()
    }

    fn exec(&self, server: &FakeModelServer, args: &[&str]) -> std::process::Output {
        let run = Run { home: self.home.path(), cwd: self.repo.path(), env: openai_env(server) };
        let mut all = vec!["-a", "never", "-s", "workspace-write"];
        all.extend_from_slice(args);
        run.run(&all, "")
    }

    fn codecoder(&self, args: &[&str]) -> std::process::Output {
        Run { home: self.home.path(), cwd: self.repo.path(), env: Vec::new() }.run(args, "")
    }

    fn log(&self) -> PathBuf {
        let dir = self.home.path().join("sessions");
        let logs: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            .collect();
        assert_eq!(logs.len(), 1, "{logs:?}");
        logs[0].clone()
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap()
    }
}

/// One turn: write_file creates, edit and apply_patch change, a command deletes one file and
/// `sed -i`s another.
fn four_changes() -> Script {
    Script::new()
        .reply(Reply::tool_call(
            "call_1",
            "write_file",
            json!({"path": "new.txt", "content": "fresh\n"}),
        ))
        .reply(Reply::tool_call(
            "call_2",
            "edit",
            json!({"path": "edit.txt", "old_string": "two", "new_string": "2"}),
        ))
        .reply(Reply::tool_call(
            "call_p",
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Update File: patch.txt\n@@\n-before the patch\n+after the patch\n*** End Patch\n"}),
        ))
        .reply(Reply::tool_call(
            "call_3",
            "run_command",
            json!({"command": "rm gone.txt && sed -i 's/alpha/ALPHA/' sed.txt"}),
        ))
        .reply(Reply::text("Done."))
}

fn assert_changed(repo: &Repo) {
    assert_eq!(repo.read("new.txt").as_deref(), Some("fresh\n"));
    assert_eq!(repo.read("edit.txt").as_deref(), Some("one\n2\nthree\n"));
    assert_eq!(repo.read("gone.txt"), None);
    assert_eq!(repo.read("sed.txt").as_deref(), Some("ALPHA\nbeta\n"));
    assert_eq!(repo.read("patch.txt").as_deref(), Some("after the patch\n"));
}

fn assert_original(repo: &Repo) {
    assert_eq!(repo.read("new.txt"), None);
    assert_eq!(repo.read("edit.txt").as_deref(), Some("one\ntwo\nthree\n"));
    assert_eq!(repo.read("gone.txt").as_deref(), Some("to be deleted\n"));
    assert_eq!(repo.read("sed.txt").as_deref(), Some("alpha\nbeta\n"));
    assert_eq!(repo.read("patch.txt").as_deref(), Some("before the patch\n"));
}

#[test]
fn sessions_undo_restores_edited_created_deleted_and_sed_changed_files() {
    let repo = Repo::new();
    let server = FakeModelServer::start(four_changes()).unwrap();
    let out = repo.exec(&server, &["exec", "change the files"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_changed(&repo);
    let log = repo.log_text();
    assert_eq!(log.matches("\"type\":\"checkpoint\"").count(), 1, "{log}");
    // The repository's own index is not touched by the snapshots.
    assert!(!repo.path(".git/index").exists());

    let log_path = repo.log();
    let out = repo.codecoder(&["sessions", "undo", log_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_original(&repo);
    let printed = stdout(&out);
    assert!(printed.contains("undoing turn(s) 1"), "{printed}");
    for name in ["new.txt", "edit.txt", "gone.txt", "sed.txt", "patch.txt"] {
        assert!(printed.contains(&format!("restored {}", repo.path(name).display())), "{printed}");
    }

    // The checkpoint and the rewind show in the transcript; nothing is left to undo.
    let out = repo.codecoder(&["sessions", "show", log_path.to_str().unwrap()]);
    let shown = stdout(&out);
    assert!(shown.contains("[checkpoint of turn 1: 5 file(s)]"), "{shown}");
    for (what, name) in [
        ("created by a tool", "new.txt"),
        ("changed by a tool", "edit.txt"),
        ("changed by a tool", "patch.txt"),
        ("deleted by a command", "gone.txt"),
        ("changed by a command", "sed.txt"),
    ] {
        let line = format!("{what}: {}", repo.path(name).display());
        assert!(shown.contains(&line), "{line}\n{shown}");
    }
    assert!(shown.contains("rewound files to before turn 1"), "{shown}");
    let out = repo.codecoder(&["sessions", "undo", log_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("no turn changed a file"), "{}", stderr(&out));
    let out = repo.codecoder(&["sessions", "validate", log_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn a_file_changed_outside_since_is_left_alone_without_force() {
    let repo = Repo::new();
    let server = FakeModelServer::start(four_changes()).unwrap();
    let out = repo.exec(&server, &["exec", "change the files"]);
    assert!(out.status.success(), "{}", stderr(&out));
    repo.write("edit.txt", "changed by the person\n");
    let log_path = repo.log();
    let log = log_path.to_str().unwrap();

    let out = repo.codecoder(&["sessions", "undo", log]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let complaint = stderr(&out);
    assert!(
        complaint.contains(&format!(
            "not restored (changed outside codecoder since): {}",
            repo.path("edit.txt").display()
        )),
        "{complaint}"
    );
    assert!(complaint.contains("--force"), "{complaint}");
    assert_eq!(repo.read("edit.txt").as_deref(), Some("changed by the person\n"));
    // The others were restored; no rewind was logged, so running it again finishes the job.
    assert_eq!(repo.read("gone.txt").as_deref(), Some("to be deleted\n"));
    assert_eq!(repo.read("new.txt"), None);
    assert!(!repo.log_text().contains("\"type\":\"rewind\""));

    let out = repo.codecoder(&["sessions", "undo", log, "--force"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_original(&repo);
    assert!(repo.log_text().contains("\"type\":\"rewind\""));
}

#[test]
fn undo_turn_1_takes_two_turns_back_and_plain_undo_only_the_last() {
    let repo = Repo::new();
    let script = Script::new()
        .reply(Reply::tool_call("c1", "write_file", json!({"path": "a.txt", "content": "v1\n"})))
        .reply(Reply::text("Wrote a."))
        .reply(Reply::tool_call(
            "c2",
            "edit",
            json!({"path": "a.txt", "old_string": "v1", "new_string": "v2"}),
        ))
        .reply(Reply::tool_call("c3", "write_file", json!({"path": "b.txt", "content": "b\n"})))
        .reply(Reply::text("Changed a, wrote b."));
    let server = FakeModelServer::start(script).unwrap();
    let out = repo.exec(&server, &["exec", "write a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = repo.exec(&server, &["exec", "resume", "--last", "change a, write b"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(repo.read("a.txt").as_deref(), Some("v2\n"));
    let log_path = repo.log();
    let log = log_path.to_str().unwrap();

    // Plain undo: the last turn only.
    let out = repo.codecoder(&["sessions", "undo", log]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("undoing turn(s) 2"), "{}", stdout(&out));
    assert_eq!(repo.read("a.txt").as_deref(), Some("v1\n"));
    assert_eq!(repo.read("b.txt"), None);

    // Turn 2 is undone already; --turn 1 takes turn 1 back.
    let out = repo.codecoder(&["sessions", "undo", log, "--turn", "1"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(repo.read("a.txt"), None);
    let out = repo.codecoder(&["sessions", "undo", log, "--turn", "0"]);
    assert_eq!(out.status.code(), Some(2), "turn numbers start at 1");
}

#[test]
fn undo_turn_1_of_two_turns_restores_both_at_once() {
    let repo = Repo::new();
    let script = Script::new()
        .reply(Reply::tool_call("c1", "write_file", json!({"path": "a.txt", "content": "v1\n"})))
        .reply(Reply::text("Wrote a."))
        .reply(Reply::tool_call(
            "c2",
            "edit",
            json!({"path": "a.txt", "old_string": "v1", "new_string": "v2"}),
        ))
        .reply(Reply::tool_call("c3", "run_command", json!({"command": "rm sed.txt"})))
        .reply(Reply::text("Changed a, removed sed."));
    let server = FakeModelServer::start(script).unwrap();
    assert!(repo.exec(&server, &["exec", "write a"]).status.success());
    assert!(repo.exec(&server, &["exec", "resume", "--last", "more"]).status.success());
    assert_eq!(repo.read("sed.txt"), None);
    let log_path = repo.log();
    let out = repo.codecoder(&["sessions", "undo", log_path.to_str().unwrap(), "--turn", "1"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("undoing turn(s) 2, 1"), "{}", stdout(&out));
    assert_eq!(repo.read("a.txt"), None);
    assert_eq!(repo.read("sed.txt").as_deref(), Some("alpha\nbeta\n"));
}

#[test]
fn a_log_cut_anywhere_around_a_checkpoint_or_rewind_validates() {
    let repo = Repo::new();
    let server = FakeModelServer::start(four_changes()).unwrap();
    assert!(repo.exec(&server, &["exec", "change the files"]).status.success());
    let log_path = repo.log();
    assert!(repo.codecoder(&["sessions", "undo", log_path.to_str().unwrap()]).status.success());
    let text = repo.log_text();
    let lines: Vec<&str> = text.lines().collect();
    let checkpoint =
        lines.iter().position(|line| line.contains("\"type\":\"checkpoint\"")).unwrap();
    let cuts = tempfile::tempdir().unwrap();
    for end in checkpoint - 1..lines.len() - 1 {
        let path = cuts.path().join(format!("cut{end}.jsonl"));
        let mut cut = lines[..=end].join("\n");
        cut.push('\n');
        // A torn half of the next line, as a crash mid-write leaves it.
        cut.push_str(&lines[end + 1][..lines[end + 1].len() / 2]);
        std::fs::write(&path, cut).unwrap();
        let out = repo.codecoder(&["sessions", "validate", path.to_str().unwrap()]);
        assert!(out.status.success(), "cut after line {end}: {}{}", stdout(&out), stderr(&out));
    }
    // A crash mid-undo (files restored, no rewind logged): the log loads and undo runs again.
    std::fs::write(&log_path, format!("{}\n", lines[..lines.len() - 1].join("\n"))).unwrap();
    assert_original(&repo);
    let out = repo.codecoder(&["sessions", "undo", log_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_original(&repo);
}
