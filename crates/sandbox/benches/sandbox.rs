//! Time added per command by each sandbox backend: spawns `true` repeatedly unconfined, under
//! bubblewrap and under Landlock (workspace-write, network off, the default hidden paths of the
//! real `$HOME`, which are only looked at), and prints the medians. Targets: < 15 ms added by
//! bubblewrap, < 5 ms by Landlock. A backend that does not work here is reported and skipped.
//!
//! Run with `cargo bench -p codecoder-sandbox`.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_sandbox::{
    BackendPreference, CommandSpec, Confinement, FsAccess, Outcome, Sandbox, SandboxPolicy,
    SpawnConfig, default_hidden_paths, probe, spawn,
};

const RUNS: usize = 60;
const STAGE: &str = env!("CARGO_BIN_EXE_codecoder-sandbox-stage");

fn median_run(confinement: &Confinement, workspace: &std::path::Path) -> Duration {
    let mut spec = CommandSpec::new("true", Vec::<String>::new());
    spec.cwd = Some(workspace.to_path_buf());
    let config = SpawnConfig { confinement: confinement.clone(), ..SpawnConfig::standard() };
    let (_keep, cancel) = crossbeam_channel::bounded::<()>(1);
    let mut times = Vec::with_capacity(RUNS);
    for run in 0..RUNS + 5 {
        let started = Instant::now();
        let mut child = spawn(&spec, &config).unwrap();
        let outcome = child.wait(&cancel, &mut |_| {}).unwrap();
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
        hidden_paths: default_hidden_paths(&home, &[]),
    };
    let unconfined = median_run(&Confinement::Unconfined, &workspace);
    println!("unconfined `true`: median {unconfined:?} over {RUNS} runs");
    for (name, preference, target) in [
        ("bwrap", BackendPreference::Bwrap, Duration::from_millis(15)),
        ("landlock", BackendPreference::Landlock, Duration::from_millis(5)),
    ] {
        let found = probe(preference);
        let Some(backend) = found.backend else {
            println!("{name}: unavailable ({})", found.notes.join("; "));
            continue;
        };
        let sandbox = Sandbox::new(policy.clone(), backend, PathBuf::from(STAGE));
        let confinement = Confinement::Sandboxed(Arc::new(sandbox));
        let median = median_run(&confinement, &workspace);
        let added = median.saturating_sub(unconfined);
        let verdict = if added < target { "within" } else { "OVER" };
        println!(
            "{name} `true`: median {median:?}, added {added:?} ({verdict} the {target:?} target)"
        );
    }
}
