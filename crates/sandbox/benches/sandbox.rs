//! Time added per command by each sandbox backend: spawns `true` repeatedly unconfined, under
//! bubblewrap and under Landlock (workspace-write, network off, the default hidden paths of the
//! real `$HOME`, which are only looked at), and prints the medians. Targets: < 15 ms added by
//! bubblewrap, < 5 ms by Landlock. A backend that does not work here is reported and skipped.
//! Each backend runs once more with a proxied network (a unix socket and a loopback port that
//! nothing is asked of: `true` makes no connection), whose cost over the network-off run is
//! the relay's start under bubblewrap and a port rule under Landlock. Target: ≤ 5 ms more.
//!
//! Run with `cargo bench -p codecoder-sandbox`.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_sandbox::{
    Backend, BackendPreference, CommandSpec, Confinement, FsAccess, NetworkProxy, Outcome,
    STAGE_MARKER, Sandbox, SandboxPolicy, SpawnConfig, Wait, default_hidden_paths, probe, spawn,
};

const RUNS: usize = 60;
const STAGE: &str = env!("CARGO_BIN_EXE_codecoder-sandbox-stage");

fn median_run(confinement: &Confinement, workspace: &std::path::Path) -> Duration {
    let mut spec = CommandSpec::new("true", Vec::<String>::new());
    spec.cwd = Some(workspace.to_path_buf());
    median(&spec, confinement)
}

fn median_spec(spec: &CommandSpec) -> Duration {
    median(spec, &Confinement::Unconfined)
}

fn median(spec: &CommandSpec, confinement: &Confinement) -> Duration {
    let config = SpawnConfig { confinement: confinement.clone(), ..SpawnConfig::standard() };
    let mut times = Vec::with_capacity(RUNS);
    for run in 0..RUNS + 5 {
        let started = Instant::now();
        let mut child = spawn(spec, &config).unwrap();
        let outcome = child.wait(&Wait::new(), &mut |_| {}).unwrap();
        drop(child);
        let elapsed = started.elapsed();
        assert!(matches!(outcome, Outcome::Exited(status) if status.success()), "{outcome:?}");
        // The first few runs warm the page cache and the probe.
        if run >= 5 {
            times.push(elapsed);
        }
    }
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let base = tempfile::tempdir().unwrap();
    let workspace = base.path().join("ws");
    fs_err::create_dir_all(workspace.join(".git")).unwrap();
    let home = std::env::var_os("HOME").map_or_else(|| base.path().join("home"), PathBuf::from);
    let policy = SandboxPolicy {
        access: FsAccess::WorkspaceWrite,
        writable_roots: vec![workspace.clone(), PathBuf::from("/tmp")],
        network: false,
        network_proxy: None,
        protected_paths: Vec::new(),
        hidden_paths: default_hidden_paths(&home, &[]),
    };
    // Kept open for the whole run so the proxy socket exists; never accepted from.
    let _unix = std::os::unix::net::UnixListener::bind(base.path().join("proxy.sock")).unwrap();
    let tcp = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let proxied = SandboxPolicy {
        network_proxy: Some(NetworkProxy {
            socket: base.path().join("proxy.sock"),
            tcp: Some(tcp.local_addr().unwrap()),
        }),
        ..policy.clone()
    };
    for note in probe(BackendPreference::Auto).notes {
        println!("probe: {note}");
    }
    let unconfined = median_run(&Confinement::Unconfined, &workspace);
    println!("unconfined `true`: median {unconfined:?} over {RUNS} runs");
    reaper_cost();
    // What this machine charges for any exec, and for the least bwrap can do: the floor under
    // the backends' figures.
    let stage_args = [STAGE_MARKER, "--mode", "seccomp", "--network", "off", "--", "true"];
    let mut stage_only = CommandSpec::new(STAGE, stage_args);
    stage_only.cwd = Some(workspace.clone());
    println!("the seccomp stage alone, then `true`: median {:?}", median_spec(&stage_only));
    if let Some(Backend::Bwrap(bwrap)) = probe(BackendPreference::Bwrap).backend {
        let bare = CommandSpec::new(bwrap, ["--ro-bind", "/", "/", "--", "true"]);
        println!("floor, `bwrap --ro-bind / / -- true`: median {:?}", median_spec(&bare));
    }
    for (name, preference, target, namespaces) in [
        ("bwrap", BackendPreference::Bwrap, Duration::from_millis(15), true),
        ("landlock", BackendPreference::Landlock, Duration::from_millis(5), true),
        ("landlock (path grants)", BackendPreference::Landlock, Duration::from_millis(5), false),
    ] {
        let found = probe(preference);
        let Some(backend) = found.backend else {
            println!("{name}: unavailable ({})", found.notes.join("; "));
            continue;
        };
        let confine = |policy: &SandboxPolicy| {
            let mut sandbox = Sandbox::new(policy.clone(), backend.clone(), PathBuf::from(STAGE));
            if !namespaces {
                sandbox = sandbox.without_namespaces();
            }
            Confinement::Sandboxed(Arc::new(sandbox))
        };
        let median = median_run(&confine(&policy), &workspace);
        let added = median.saturating_sub(unconfined);
        let verdict = if added < target { "within" } else { "OVER" };
        println!(
            "{name} `true`: median {median:?}, added {added:?} ({verdict} the {target:?} target)"
        );
        let proxied_median = median_run(&confine(&proxied), &workspace);
        let added = proxied_median.saturating_sub(median);
        let target = Duration::from_millis(5);
        let verdict = if added <= target { "within" } else { "OVER" };
        println!(
            "{name} `true`, proxied network: median {proxied_median:?}, {added:?} more than \
             network off ({verdict} the {target:?} target)"
        );
    }
}

/// What the reaper (`reaper.rs`) adds to a spawn: its child announces itself between fork and
/// exec, so the spawn takes std's fork path instead of `posix_spawn`, and makes four system
/// calls (open, read and close `/proc/self/stat`, one `send`). Measured on plain std spawns of
/// `true` in a process group of their own, without and with a closure making those calls.
#[allow(clippy::disallowed_methods, unsafe_code)] // A benchmark of the crate that spawns.
fn reaper_cost() {
    use std::os::unix::process::CommandExt;

    let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&ours);
    let time = |announce: bool| {
        let mut times = Vec::with_capacity(RUNS);
        for run in 0..RUNS + 5 {
            let started = Instant::now();
            let mut command = std::process::Command::new("true");
            command.process_group(0);
            if announce {
                // SAFETY: the same async-signal-safe calls the reaper's closure makes.
                unsafe {
                    command.pre_exec(move || {
                        let mut buffer = [0u8; 1024];
                        let file = nix::libc::open(
                            c"/proc/self/stat".as_ptr(),
                            nix::libc::O_RDONLY | nix::libc::O_CLOEXEC,
                        );
                        nix::libc::read(file, buffer.as_mut_ptr().cast(), buffer.len());
                        nix::libc::close(file);
                        let line = b"+123456 98765432\n";
                        nix::libc::send(
                            fd,
                            line.as_ptr().cast(),
                            line.len(),
                            nix::libc::MSG_NOSIGNAL | nix::libc::MSG_DONTWAIT,
                        );
                        Ok(())
                    });
                }
            }
            assert!(command.status().unwrap().success());
            if run >= 5 {
                times.push(started.elapsed());
            }
        }
        times.sort();
        times[times.len() / 2]
    };
    let plain = time(false);
    let announced = time(true);
    println!(
        "reaper: std spawn of `true` {plain:?}, announced to the reaper {announced:?} (added {:?})",
        announced.saturating_sub(plain)
    );
}
