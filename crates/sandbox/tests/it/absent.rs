//! Protected names that do not exist yet: a confined command that creates `.git`, `.codecoder`,
//! `.agents`, `.mcp.json` or `.claude/settings*.json` in a writable root finds them gone once it
//! has ended, with a line in its output saying so; what existed before is left alone; and a
//! command that creates nothing leaves nothing behind (no mount point made on the host). On each
//! Linux backend, and on Landlock without namespaces.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codecoder_sandbox::{
    BackendPreference, CommandSpec, Confinement, FsAccess, Outcome, Sandbox, SandboxPolicy,
    SpawnConfig, Wait, probe, spawn,
};

const TESTS_ENV: &str = codecoder_protocol::env::CODECODER_SANDBOX_TESTS;
const STAGE: &str = env!("CARGO_BIN_EXE_codecoder-sandbox-stage");

/// The sandbox for `backend` over `roots`, or `None` when it is unavailable and its skip was
/// asked for.
fn confinement(backend: &str, roots: &[PathBuf], namespaces: bool) -> Option<Confinement> {
    let preference = match backend {
        "bwrap" => BackendPreference::Bwrap,
        _ => BackendPreference::Landlock,
    };
    let found = probe(preference);
    let Some(chosen) = found.backend else {
        let skips = std::env::var(TESTS_ENV).unwrap_or_default();
        if skips.split(',').any(|skip| skip.trim() == format!("skip-{backend}")) {
            eprintln!("skipping the {backend} backend as {TESTS_ENV} asks: {:?}", found.notes);
            return None;
        }
        panic!("the {backend} backend is unavailable here: {:?}", found.notes);
    };
    let policy = SandboxPolicy {
        access: FsAccess::WorkspaceWrite,
        writable_roots: roots.to_vec(),
        network: false,
        network_proxy: None,
        hidden_paths: Vec::new(),
        protected_paths: Vec::new(),
    };
    let mut sandbox = Sandbox::new(policy, chosen, PathBuf::from(STAGE));
    if !namespaces {
        sandbox = sandbox.without_namespaces();
    }
    Some(Confinement::Sandboxed(Arc::new(sandbox)))
}

fn run(confinement: &Confinement, cwd: &Path, script: &str) -> (Option<i32>, String) {
    let mut spec = CommandSpec::new("sh", ["-c", script]);
    spec.cwd = Some(cwd.to_path_buf());
    let config = SpawnConfig { confinement: confinement.clone(), ..SpawnConfig::standard() };
    let mut child = spawn(&spec, &config).unwrap();
    let mut output = Vec::new();
    let outcome = child.wait(&Wait::new(), &mut |chunk| output.extend_from_slice(&chunk.bytes));
    let Outcome::Exited(status) = outcome.unwrap() else { panic!("stopped") };
    (status.code(), String::from_utf8_lossy(&output).into_owned())
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const CREATE: &str = "mkdir -p .git/hooks && printf '#!/bin/sh\\n' > .git/hooks/pre-commit \
    && mkdir .codecoder .agents && echo '{}' > .mcp.json && mkdir -p .claude \
    && echo '{}' > .claude/settings.json && echo '{}' > .claude/settings.local.json \
    && echo ok > kept.txt && test -f .git/hooks/pre-commit && echo created";

fn check(backend: &str, namespaces: bool) {
    let base = tempfile::tempdir().unwrap();
    let base = fs_err::canonicalize(base.path()).unwrap();
    let ws = base.join("ws");
    let repo = base.join("repo");
    fs_err::create_dir_all(&ws).unwrap();
    fs_err::create_dir_all(repo.join(".git")).unwrap();
    let Some(confinement) = confinement(backend, &[ws.clone(), repo.clone()], namespaces) else {
        return;
    };
    let label = format!("{backend} (namespaces: {namespaces})");

    // Nothing created: nothing left behind, not even an empty mount point.
    let (code, output) = run(&confinement, &ws, "echo hello > file.txt");
    assert_eq!(code, Some(0), "{label}: {output}");
    assert_eq!(entries(&ws), vec!["file.txt"], "{label}");
    assert!(!output.contains("codecoder sandbox"), "{label}: {output}");

    let (code, output) = run(&confinement, &ws, CREATE);
    // Under bubblewrap and Landlock with namespaces the command could create them: they are
    // removed once it ended.
    let created = namespaces || backend == "bwrap";
    if created {
        assert_eq!(code, Some(0), "{label}: {output}");
        assert!(output.contains("created"), "{label}: {output}");
        for name in [".git", ".codecoder", ".agents", ".mcp.json", ".claude/settings.json"] {
            let line = format!("removed `{}`, which the command created", ws.join(name).display());
            assert!(output.contains(&line), "{label}: {line} in {output}");
        }
    }
    // Without namespaces Landlock may refuse some of them outright; either way none is left.
    for name in [
        ".git",
        ".codecoder",
        ".agents",
        ".mcp.json",
        ".claude/settings.json",
        ".claude/settings.local.json",
    ] {
        assert!(fs_err::symlink_metadata(ws.join(name)).is_err(), "{label}: {name} is left");
    }
    if created {
        assert_eq!(fs_err::read_to_string(ws.join("kept.txt")).unwrap(), "ok\n", "{label}");
    }
    // An existing `.git` (another root's) is read-only and never swept.
    let (code, output) = run(&confinement, &repo, "touch .git/x; echo done");
    assert_eq!(code, Some(0), "{label}: {output}");
    assert!(repo.join(".git").is_dir(), "{label}");
    assert!(!repo.join(".git/x").exists(), "{label}");
    assert!(!output.contains("removed"), "{label}: {output}");
}

#[test]
fn bwrap_removes_what_a_command_created_at_absent_protected_names() {
    check("bwrap", true);
}

#[test]
fn landlock_removes_what_a_command_created_at_absent_protected_names() {
    check("landlock", true);
}

#[test]
fn landlock_without_namespaces_leaves_none_of_them() {
    check("landlock", false);
}
