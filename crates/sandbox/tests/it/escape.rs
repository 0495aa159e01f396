//! The escape suite: every attempt a real shell command, run the way the agent runs commands
//! (through `spawn`, cwd in the workspace), under workspace-write with the network off, on each
//! Linux backend. Every attempt must fail and leave no trace. The same commands run unconfined
//! must succeed and leave their trace, so the suite proves the sandbox, not a broken command.
//!
//! A backend that does not work on this machine fails its tests with the probe's notes, unless
//! `CODECODER_SANDBOX_TESTS` holds `skip-<backend>` (e.g. `skip-bwrap`).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_sandbox::{
    Backend, BackendPreference, CommandSpec, Confinement, FsAccess, Outcome, Sandbox,
    SandboxPolicy, SpawnConfig, Wait, default_hidden_paths, live_group_members, probe, spawn,
};
use tempfile::TempDir;

/// Lists the backends whose tests may be skipped, as `skip-bwrap,skip-landlock`.
const TESTS_ENV: &str = codecoder_protocol::env::CODECODER_SANDBOX_TESTS;
const STAGE: &str = env!("CARGO_BIN_EXE_codecoder-sandbox-stage");

struct Fixture {
    base: TempDir,
}

impl Fixture {
    fn new() -> Self {
        let base = tempfile::tempdir().unwrap();
        let fixture = Fixture { base };
        for dir in [
            "ws/.git/hooks",
            "ws/src",
            "scratch/repo/.git/hooks",
            "beside",
            "home/.ssh",
            "home/.aws",
        ] {
            fs_err::create_dir_all(fixture.path(dir)).unwrap();
        }
        fs_err::create_dir_all(fixture.path("secret")).unwrap();
        fs_err::write(fixture.path("home/.ssh/id_ed25519"), "FAKE-SSH-KEY\n").unwrap();
        fs_err::write(fixture.path("home/.aws/credentials"), "FAKE-AWS-SECRET\n").unwrap();
        fs_err::write(fixture.path("secret/token.txt"), "FAKE-DENIED-TOKEN\n").unwrap();
        fs_err::write(fixture.path("home/notes.txt"), "readable\n").unwrap();
        fs_err::write(fixture.path("ws/src/main.txt"), "workspace file\n").unwrap();
        std::os::unix::fs::symlink(fixture.path("beside/via-link"), fixture.path("ws/link"))
            .unwrap();
        fixture
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.base.path().join(relative)
    }

    fn policy(&self) -> SandboxPolicy {
        SandboxPolicy {
            access: FsAccess::WorkspaceWrite,
            // `scratch/repo` is a root inside another root, as a workspace under `/tmp` is.
            writable_roots: vec![self.path("ws"), self.path("scratch"), self.path("scratch/repo")],
            network: false,
            network_proxy: None,
            protected_paths: Vec::new(),
            hidden_paths: default_hidden_paths(&self.path("home"), &[self.path("secret")]),
        }
    }

    /// Runs `script` with `sh -c` in the workspace, HOME and TMPDIR pointing into the fixture.
    fn run(&self, confinement: &Confinement, script: &str) -> (Option<i32>, String) {
        let mut spec = CommandSpec::new("sh", ["-c", script]);
        spec.cwd = Some(self.path("ws"));
        spec.env = vec![
            ("HOME".into(), self.path("home").into()),
            ("TMPDIR".into(), self.path("scratch").into()),
        ];
        let config = SpawnConfig { confinement: confinement.clone(), ..SpawnConfig::standard() };
        let mut child = spawn(&spec, &config).unwrap();
        let mut output = Vec::new();
        let outcome = child.wait(&Wait::new(), &mut |chunk| output.extend_from_slice(&chunk.bytes));
        let Outcome::Exited(status) = outcome.unwrap() else { panic!("stopped") };
        let code = status.code();
        (code, String::from_utf8_lossy(&output).into_owned())
    }
}

/// The sandbox for `backend`, or `None` when it is unavailable and its skip was asked for.
pub(crate) fn sandboxed(backend: &str, policy: SandboxPolicy) -> Option<Confinement> {
    let preference = match backend {
        "bwrap" => BackendPreference::Bwrap,
        "landlock" => BackendPreference::Landlock,
        other => panic!("unknown backend {other}"),
    };
    let found = probe(preference);
    match found.backend {
        Some(chosen) => {
            assert_eq!(chosen.name(), backend, "{:?}", found.notes);
            let sandbox = Sandbox::new(policy, chosen, PathBuf::from(STAGE));
            Some(Confinement::Sandboxed(Arc::new(sandbox)))
        }
        None => {
            let skips = std::env::var(TESTS_ENV).unwrap_or_default();
            if skips.split(',').any(|skip| skip.trim() == format!("skip-{backend}")) {
                eprintln!("skipping the {backend} backend as {TESTS_ENV} asks: {:?}", found.notes);
                return None;
            }
            panic!(
                "the {backend} backend is unavailable here: {:?}; set {TESTS_ENV}=skip-{backend} to skip it",
                found.notes
            );
        }
    }
}

/// What one attempt did.
#[derive(Debug)]
struct Attempt {
    name: &'static str,
    /// The command reported success (and, for reads, printed the secret).
    succeeded: bool,
    /// Something outside the sandbox changed: a file exists, a connection arrived, a process died.
    trace: bool,
    output: String,
}

/// Runs every escape attempt under `confinement`. Cleans up any trace it finds.
fn attempts(fixture: &Fixture, confinement: &Confinement, include_etc: bool) -> Vec<Attempt> {
    let mut results = Vec::new();
    let mut write_attempt = |name: &'static str, script: String, target: PathBuf| {
        let (code, output) = fixture.run(confinement, &script);
        let trace = target.exists();
        if trace {
            fs_err::remove_file(&target).unwrap();
        }
        results.push(Attempt { name, succeeded: code == Some(0), trace, output });
    };
    if include_etc {
        let target = PathBuf::from(format!("/etc/codecoder-escape-{}", std::process::id()));
        write_attempt("write /etc", format!("echo x > {}", target.display()), target);
    }
    write_attempt(
        "write $HOME",
        "echo x > \"$HOME/escape.txt\"".to_owned(),
        fixture.path("home/escape.txt"),
    );
    write_attempt(
        "write beside the workspace",
        format!("echo x > {}", fixture.path("beside/escape.txt").display()),
        fixture.path("beside/escape.txt"),
    );
    write_attempt(
        "write through a symlink",
        "echo x > link".to_owned(),
        fixture.path("beside/via-link"),
    );
    write_attempt(
        "write .git/hooks",
        "echo 'echo pwned' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit".to_owned(),
        fixture.path("ws/.git/hooks/pre-commit"),
    );
    write_attempt(
        "write .git/hooks of a root inside another root",
        format!("echo x > {}", fixture.path("scratch/repo/.git/hooks/pre-commit").display()),
        fixture.path("scratch/repo/.git/hooks/pre-commit"),
    );

    for (name, relative, secret) in [
        ("read a denied path", "secret/token.txt", "FAKE-DENIED-TOKEN"),
        ("read ~/.ssh", "home/.ssh/id_ed25519", "FAKE-SSH-KEY"),
        ("read ~/.aws/credentials", "home/.aws/credentials", "FAKE-AWS-SECRET"),
    ] {
        let (code, output) =
            fixture.run(confinement, &format!("cat {}", fixture.path(relative).display()));
        let leaked = output.contains(secret);
        results.push(Attempt { name, succeeded: code == Some(0) && leaked, trace: leaked, output });
    }
    let (code, output) = fixture.run(confinement, "ls \"$HOME/.ssh\" && cat \"$HOME\"/.ssh/*");
    let leaked = output.contains("FAKE-SSH-KEY");
    results.push(Attempt {
        name: "read ~/.ssh/*",
        succeeded: code == Some(0),
        trace: leaked,
        output,
    });

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (code, output) = fixture.run(
        confinement,
        &format!(
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3); print('connected')\""
        ),
    );
    let accepted = listener.accept().is_ok();
    results.push(Attempt {
        name: "connect to a loopback listener",
        succeeded: code == Some(0),
        trace: accepted,
        output,
    });

    let (code, output) = fixture.run(
        confinement,
        "python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); print(\"opened\", s.fileno())'",
    );
    results.push(Attempt {
        name: "open an AF_INET socket",
        succeeded: code == Some(0),
        trace: false,
        output,
    });

    let (code, output) = fixture.run(confinement, PTRACE_SCRIPT);
    results.push(Attempt { name: "ptrace", succeeded: code == Some(0), trace: false, output });

    // A process outside the sandbox (started unconfined by the test) must survive a kill.
    let mut outsider_spec = CommandSpec::new("sleep", ["30"]);
    outsider_spec.env = vec![("FAKE_AGENT_KEY".into(), "FAKE-KEY-IN-ENVIRON".into())];
    let outsider = spawn(&outsider_spec, &SpawnConfig::standard()).unwrap();
    let pid = outsider.pid();
    // Another process's environment (the agent's API keys live there) must stay unreadable.
    let (code, output) = fixture.run(confinement, &format!("cat /proc/{pid}/environ"));
    let leaked = output.contains("FAKE-KEY-IN-ENVIRON");
    results.push(Attempt {
        name: "read another process's environ",
        succeeded: code == Some(0) && leaked,
        trace: leaked,
        output,
    });
    let (code, output) = fixture.run(confinement, &format!("kill -TERM {pid}"));
    let died = wait_until(Duration::from_millis(500), || live_group_members(pid).is_empty());
    drop(outsider);
    results.push(Attempt {
        name: "signal a process outside",
        succeeded: code == Some(0),
        trace: died,
        output,
    });
    results
}

/// Forks a child and tries to `PTRACE_SEIZE` it; exit 0 only when ptrace worked.
const PTRACE_SCRIPT: &str = r#"python3 -c '
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
pid = os.fork()
if pid == 0:
    time.sleep(5)
    os._exit(0)
result = libc.ptrace(0x4206, pid, None, None)
errno = ctypes.get_errno()
os.kill(pid, 9)
os.waitpid(pid, 0)
print("ptrace:", "ok" if result == 0 else os.strerror(errno))
sys.exit(0 if result == 0 else 1)
'"#;

pub(crate) fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn assert_all_blocked(backend: &str, results: &[Attempt]) {
    if std::env::var_os("ESCAPE_VERBOSE").is_some() {
        eprintln!("{backend}: {results:#?}");
    }
    let escaped: Vec<String> = results
        .iter()
        .filter(|attempt| attempt.succeeded || attempt.trace)
        .map(|attempt| format!("{} (output: {:?})", attempt.name, attempt.output))
        .collect();
    assert!(escaped.is_empty(), "{backend}: these attempts got through: {escaped:#?}");
    // The suite has teeth only if it ran everything.
    assert!(results.len() >= 14, "{backend}: only {} attempts ran", results.len());
}

fn escape_suite(backend: &str) {
    let fixture = Fixture::new();
    let Some(confinement) = sandboxed(backend, fixture.policy()) else { return };
    let results = attempts(&fixture, &confinement, true);
    assert_all_blocked(backend, &results);
}

#[test]
fn bwrap_blocks_every_escape() {
    escape_suite("bwrap");
}

#[test]
fn landlock_blocks_every_escape() {
    escape_suite("landlock");
}

#[test]
fn landlock_without_namespaces_blocks_every_escape() {
    let fixture = Fixture::new();
    let Some(Confinement::Sandboxed(sandbox)) = sandboxed("landlock", fixture.policy()) else {
        return;
    };
    let sandbox = Sandbox::clone(&sandbox).without_namespaces();
    let confinement = Confinement::Sandboxed(Arc::new(sandbox));
    let results = attempts(&fixture, &confinement, true);
    assert_all_blocked("landlock (path grants)", &results);
    // The price of the fallback: the workspace's own top level takes no new entries.
    let (code, _) = fixture.run(&confinement, "echo x > new-top-level.txt");
    assert_ne!(code, Some(0));
    let (code, output) = fixture.run(&confinement, "echo x > src/new.txt && cat src/new.txt");
    assert_eq!((code, output.as_str()), (Some(0), "x\n"));
}

#[test]
fn the_same_attempts_succeed_unconfined() {
    let fixture = Fixture::new();
    // Writing the real /etc is left out: a test must not touch it, and the same command shape
    // is proven by the write beside the workspace.
    let results = attempts(&fixture, &Confinement::Unconfined, false);
    let blocked: Vec<&Attempt> = results
        .iter()
        .filter(|attempt| {
            let leaves_trace = !matches!(attempt.name, "open an AF_INET socket" | "ptrace");
            !attempt.succeeded || (leaves_trace && !attempt.trace)
        })
        .collect();
    assert!(blocked.is_empty(), "these controls failed unconfined: {blocked:#?}");
    assert_eq!(results.len(), 14);
}

/// Ordinary work still works under each backend: the workspace and scratch are writable, the
/// rest of the home readable, AF_UNIX sockets usable, and the environment says where it runs.
fn ordinary_work(backend: &str) {
    let fixture = Fixture::new();
    let Some(confinement) = sandboxed(backend, fixture.policy()) else { return };
    let script = "set -e
        echo new > new.txt && mkdir -p sub/dir && echo deep > sub/dir/f && cat new.txt sub/dir/f
        echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"
        cat \"$HOME/notes.txt\" src/main.txt
        ls \"$HOME\" && ls / >/dev/null
        ls .git
        python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"unix\"); print(b.recv(4).decode())'
        echo \"$CODECODER_SANDBOX $CODECODER_SANDBOX_NETWORK_DISABLED\"";
    let (code, output) = fixture.run(&confinement, script);
    assert_eq!(code, Some(0), "{output}");
    let expected =
        format!("new\ndeep\ntmp\nreadable\nworkspace file\nnotes.txt\nhooks\nunix\n{backend} 1\n");
    assert_eq!(output, expected);
}

#[test]
fn bwrap_leaves_ordinary_work_alone() {
    ordinary_work("bwrap");
}

#[test]
fn landlock_leaves_ordinary_work_alone() {
    ordinary_work("landlock");
}

/// Cancel ends everything the command started, including a process in a session of its own.
fn cancel_kills_everything(backend: &str, marker: &str) {
    let fixture = Fixture::new();
    let Some(confinement) = sandboxed(backend, fixture.policy()) else { return };
    let mut spec = CommandSpec::new(
        "sh",
        ["-c", &format!("sleep {marker} & setsid sleep {marker} & echo ready; wait")],
    );
    spec.cwd = Some(fixture.path("ws"));
    let config = SpawnConfig { confinement, ..SpawnConfig::standard() };
    let mut child = spawn(&spec, &config).unwrap();
    let (cancel_tx, cancel) = crossbeam_channel::bounded(1);
    let outcome = child
        .wait(&Wait::new().cancel_on(&cancel), &mut |chunk| {
            if chunk.bytes.starts_with(b"ready") {
                // Give `setsid` a moment to have run before cancelling.
                std::thread::sleep(Duration::from_millis(100));
                let _ = cancel_tx.try_send(());
            }
        })
        .unwrap();
    assert_eq!(outcome, Outcome::Cancelled);
    drop(child);
    let gone = wait_until(Duration::from_secs(2), || processes_with_arg(marker).is_empty());
    assert!(gone, "{backend}: still running after cancel: {:?}", processes_with_arg(marker));
}

fn processes_with_arg(arg: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in fs_err::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = fs_err::read(entry.path().join("cmdline")) else { continue };
        let Ok(stat) = fs_err::read_to_string(entry.path().join("stat")) else { continue };
        let zombie =
            stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie && cmdline.split(|byte| *byte == 0).any(|part| part == arg.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn bwrap_cancel_kills_everything_inside() {
    cancel_kills_everything("bwrap", "987.25");
}

/// A cancel that comes while bubblewrap is still setting up (its sandboxed child not yet in a
/// session of its own, or not yet asking to die with its parent) must end everything too: the
/// outer bwrap dies at once, and the child, as the pid namespace's init, ignores SIGTERM.
fn cancel_during_start_up_leaves_nothing(backend: &str, marker: &str) {
    let fixture = Fixture::new();
    let Some(confinement) = sandboxed(backend, fixture.policy()) else { return };
    let config = SpawnConfig { confinement, ..SpawnConfig::standard() };
    // From at once to 10 ms after the spawn, the span of bubblewrap's own start.
    for attempt in 0..40u64 {
        let mut spec = CommandSpec::new("sleep", [marker]);
        spec.cwd = Some(fixture.path("ws"));
        let mut child = spawn(&spec, &config).unwrap();
        std::thread::sleep(Duration::from_micros(attempt * 250));
        let (cancel_tx, cancel) = crossbeam_channel::bounded(1);
        cancel_tx.send(()).unwrap();
        let outcome = child.wait(&Wait::new().cancel_on(&cancel), &mut |_| {}).unwrap();
        assert_eq!(outcome, Outcome::Cancelled);
        // Read before the drop: a survivor holds the output pipe, which the drop waits on.
        let left = processes_with_arg(marker);
        if !left.is_empty() {
            for &pid in &left {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid.try_into().unwrap()),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            panic!(
                "{backend}: cancelled {}µs after the spawn, still running: {left:?}",
                attempt * 250
            );
        }
        drop(child);
    }
}

#[test]
fn bwrap_cancel_during_start_up_leaves_nothing() {
    cancel_during_start_up_leaves_nothing("bwrap", "985.25");
}

#[test]
fn landlock_cancel_during_start_up_leaves_nothing() {
    cancel_during_start_up_leaves_nothing("landlock", "985.26");
}

#[test]
fn landlock_cancel_kills_everything_it_started() {
    // The command runs in a pid namespace of its own: a `setsid` child, which leaves the
    // spawner's process group, still ends with it.
    let fixture = Fixture::new();
    let Some(confinement) = sandboxed("landlock", fixture.policy()) else { return };
    let mut spec = CommandSpec::new(
        "sh",
        // The daemon lets go of the output pipes, so nothing but the namespace ends it.
        ["-c", "sleep 986.25 & setsid sleep 986.26 >/dev/null 2>&1 & sleep 0.2; echo ready; wait"],
    );
    spec.cwd = Some(fixture.path("ws"));
    let config = SpawnConfig { confinement, ..SpawnConfig::standard() };
    let mut child = spawn(&spec, &config).unwrap();
    let (cancel_tx, cancel) = crossbeam_channel::bounded(1);
    let outcome = child
        .wait(&Wait::new().cancel_on(&cancel), &mut |chunk| {
            if chunk.bytes.starts_with(b"ready") {
                let _ = cancel_tx.try_send(());
            }
        })
        .unwrap();
    assert_eq!(outcome, Outcome::Cancelled);
    drop(child);
    assert!(wait_until(Duration::from_secs(2), || processes_with_arg("986.25").is_empty()));
    assert!(wait_until(Duration::from_secs(2), || processes_with_arg("986.26").is_empty()));
}

#[test]
fn landlock_keeps_the_exit_status_and_ends_leftovers() {
    let fixture = Fixture::new();
    let Some(confinement) = sandboxed("landlock", fixture.policy()) else { return };
    // A daemon left behind by a command that exits by itself ends with it too.
    let mut spec =
        CommandSpec::new("sh", ["-c", "setsid sleep 986.27 >/dev/null 2>&1 & sleep 0.1; exit 7"]);
    spec.cwd = Some(fixture.path("ws"));
    let config = SpawnConfig { confinement, ..SpawnConfig::standard() };
    let mut child = spawn(&spec, &config).unwrap();
    let outcome = child.wait(&Wait::new(), &mut |_| {}).unwrap();
    assert!(matches!(outcome, Outcome::Exited(status) if status.code() == Some(7)), "{outcome:?}");
    assert!(wait_until(Duration::from_secs(2), || processes_with_arg("986.27").is_empty()));
}

#[test]
fn a_stage_error_is_one_line_and_exit_126() {
    let fixture = Fixture::new();
    let Some(confinement) = sandboxed("landlock", fixture.policy()) else { return };
    let (code, output) = {
        let spec = CommandSpec::new("/nonexistent/codecoder-program", Vec::<String>::new());
        let config = SpawnConfig { confinement, ..SpawnConfig::standard() };
        let mut child = spawn(&spec, &config).unwrap();
        let mut output = Vec::new();
        let outcome = child.wait(&Wait::new(), &mut |chunk| output.extend_from_slice(&chunk.bytes));
        let Outcome::Exited(status) = outcome.unwrap() else { panic!("stopped") };
        (status.code(), String::from_utf8_lossy(&output).into_owned())
    };
    assert_eq!(code, Some(126));
    assert!(
        output.starts_with("codecoder sandbox: could not run `/nonexistent/codecoder-program`"),
        "{output}"
    );
    assert_eq!(output.lines().count(), 1, "{output}");
}

#[test]
fn probe_explains_itself_and_is_cached() {
    let first = probe(BackendPreference::Auto);
    // Both mechanisms are reported, whichever wins.
    assert!(first.notes.iter().any(|note| note.starts_with("bwrap: ")), "{:?}", first.notes);
    assert!(first.notes.iter().any(|note| note.starts_with("landlock: ")), "{:?}", first.notes);
    let started = Instant::now();
    let second = probe(BackendPreference::Auto);
    assert!(started.elapsed() < Duration::from_millis(5));
    assert_eq!(first, second);
    if let Some(Backend::Bwrap(path)) = &first.backend {
        assert!(first.notes.iter().any(|note| note.contains(&path.display().to_string())));
    }
}

#[test]
fn protected_subpaths_cover_a_gitdir_pointer() {
    let fixture = Fixture::new();
    let repo = fixture.path("beside/repo.git");
    fs_err::create_dir_all(repo.join("worktrees/wt")).unwrap();
    fs_err::write(repo.join("worktrees/wt/commondir"), "../..\n").unwrap();
    let wt = fixture.path("wt");
    fs_err::create_dir_all(&wt).unwrap();
    fs_err::write(wt.join(".git"), format!("gitdir: {}\n", repo.join("worktrees/wt").display()))
        .unwrap();
    let mut policy = fixture.policy();
    // The repository is inside a writable root here, so its hooks need the protection.
    policy.writable_roots.push(fixture.path("beside"));
    policy.writable_roots.push(wt.clone());
    let protected = policy.protected_subpaths();
    let canonical = |path: &Path| fs_err::canonicalize(path).unwrap();
    assert!(protected.contains(&canonical(&repo)), "{protected:?}");
    assert!(protected.contains(&canonical(&repo.join("worktrees/wt"))), "{protected:?}");
    assert!(protected.contains(&canonical(&wt.join(".git"))), "{protected:?}");
    assert!(protected.contains(&canonical(&fixture.path("ws/.git"))), "{protected:?}");
}
