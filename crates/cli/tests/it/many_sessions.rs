//! Many sessions at once: 50 `exec` processes started together in one `CODECODER_HOME` (each a
//! one-request task against one fake model server, in a directory of its own), while other
//! processes list the sessions (refreshing the shared index) meanwhile. All finish; `sessions
//! list` then shows every session with its title and cwd (`-n` the newest); the index, kept up by refreshes that
//! raced the writers, says what a rebuild from the logs says; the shared shell snapshot is one
//! whole file.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::Value;

use crate::{stderr, stdout};

const SESSIONS: usize = 50;

fn base(command: &mut Command, cchome: &Path, home: &Path) {
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("CODECODER_HOME", cchome)
        .stdin(Stdio::null());
}

/// `sessions list --all --json` (plus `extra`), parsed.
fn list(cchome: &Path, home: &Path, extra: &[&str]) -> Vec<Value> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_codecoder"));
    base(&mut command, cchome, home);
    let out = command.args(["sessions", "list", "--all", "--json"]).args(extra).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn fifty_concurrent_execs_all_finish_with_the_index_right() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (cchome, home) = (root.join("cchome"), root.join("home"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join(".bash_profile"), "export FROM_PROFILE=yes\n").unwrap();
    let mut script = Script::new();
    for _ in 0..SESSIONS {
        script = script.reply(Reply::text("done"));
    }
    let server = FakeModelServer::start(script).unwrap();

    let execs: Vec<(String, String, Child)> = (0..SESSIONS)
        .map(|n| {
            let cwd = root.join(format!("ws-{n:02}"));
            std::fs::create_dir_all(&cwd).unwrap();
            let title = format!("task {n:02}: make the tests pass");
            let mut command = Command::new(env!("CARGO_BIN_EXE_codecoder"));
            base(&mut command, &cchome, &home);
            let child = command
                .args(["exec", &title])
                .current_dir(&cwd)
                .env("OPENAI_API_KEY", "sk-test")
                .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (title, cwd.to_string_lossy().into_owned(), child)
        })
        .collect();
    // Refreshes racing the writers: each sees some logs half written.
    for _ in 0..5 {
        list(&cchome, &home, &[]);
    }
    let mut expected = Vec::new();
    for (title, cwd, child) in execs {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{title}: {}", stderr(&out));
        assert!(stdout(&out).contains("done"), "{title}: {}", stdout(&out));
        expected.push((title, cwd));
    }
    assert_eq!(server.requests().len(), SESSIONS);

    // Every session, with its title and cwd.
    let listed = list(&cchome, &home, &[]);
    let mut seen: Vec<(String, String)> = listed
        .iter()
        .map(|s| (s["title"].as_str().unwrap().to_owned(), s["cwd"].as_str().unwrap().to_owned()))
        .collect();
    seen.sort();
    expected.sort();
    assert_eq!(seen, expected);
    for session in &listed {
        assert!(session["problem"].is_null(), "{session}");
        assert_eq!(session["recordCount"], 8, "{session}");
    }
    // One `--cwd` finds its one session.
    let one = list(&cchome, &home, &["--cwd", &expected[7].1]);
    assert_eq!(one.len(), 1);
    assert_eq!(one[0]["title"], expected[7].0.as_str());

    // The table shows the newest N, and says how many there are.
    let mut table = Command::new(env!("CARGO_BIN_EXE_codecoder"));
    base(&mut table, &cchome, &home);
    let out = table.args(["sessions", "list", "-n", "5"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<String> = stdout(&out).lines().skip(1).map(str::to_owned).collect();
    let newest: Vec<String> =
        listed[..5].iter().map(|s| s["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(rows.len(), 5, "{rows:?}");
    for (row, id) in rows.iter().zip(&newest) {
        assert!(row.starts_with(id.as_str()), "{row} / {id}");
    }
    assert_eq!(
        stderr(&out).trim(),
        format!("showing the newest 5 of {SESSIONS} sessions (-n N or --all for more)")
    );
    // Showing none is not a listing: a usage error.
    let mut none = Command::new(env!("CARGO_BIN_EXE_codecoder"));
    base(&mut none, &cchome, &home);
    let out = none.args(["sessions", "list", "-n", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("invalid value '0'"), "{}", stderr(&out));

    // The index the racing refreshes left agrees with one rebuilt from the logs.
    let mut reindex = Command::new(env!("CARGO_BIN_EXE_codecoder"));
    base(&mut reindex, &cchome, &home);
    let out = reindex.args(["sessions", "reindex"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), format!("indexed {SESSIONS} session(s)"));
    assert_eq!(list(&cchome, &home, &[]), listed);

    // The sessions shared one shell snapshot, left whole (no temporary file).
    let snapshots: Vec<_> = std::fs::read_dir(cchome.join("shell_snapshots"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(snapshots.len(), 1, "{snapshots:?}");
    let script = std::fs::read_to_string(&snapshots[0]).unwrap();
    assert!(script.contains("export FROM_PROFILE='yes'\n"), "{script}");
}
