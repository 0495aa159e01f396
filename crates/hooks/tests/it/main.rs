//! Integration tests of the hooks crate: configuration loading from real files, and real `sh`
//! hook scripts run through the sandbox.

// Helpers outside `#[test]` functions are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod config;
mod run;
mod trust;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codecoder_hooks::{CommonInput, HookRunner, HookSet, HookSources};
use serde_json::Value;
use tempfile::TempDir;

/// A temporary project with a place for hook scripts.
struct Fixture {
    dir: TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(dir.path().join("project")).unwrap();
        fs_err::create_dir_all(dir.path().join("scripts")).unwrap();
        fs_err::create_dir_all(dir.path().join("out")).unwrap();
        Fixture { dir }
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    /// Where scripts leave what they saw.
    fn out(&self, name: &str) -> PathBuf {
        self.dir.path().join("out").join(name)
    }

    /// Writes an executable `sh` script and returns its path, usable as a hook command.
    fn script(&self, name: &str, body: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.path().join("scripts").join(name);
        fs_err::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_str().unwrap().to_owned()
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(relative);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(&path, text).unwrap();
        path
    }

    /// A runner for hooks given as the config.toml `[hooks]` table.
    fn runner(&self, hooks: Value) -> HookRunner {
        let sources = HookSources {
            project_dir: self.project(),
            home: None,
            config_hooks: Some((hooks, self.dir.path().join("config.toml"))),
            read_claude_settings: false,
            project_trusted: true,
        };
        let (set, warnings) = HookSet::load(&sources).unwrap();
        assert_eq!(warnings, Vec::<String>::new());
        HookRunner::new(Arc::new(set), common(&self.project()))
    }
}

fn common(project: &Path) -> CommonInput {
    CommonInput {
        session_id: "sess-1".to_owned(),
        transcript_path: project.join("session.jsonl"),
        cwd: project.to_owned(),
        permission_mode: "default".to_owned(),
    }
}
