//! A temporary workspace: `ws/` (the cwd and a writable root), `tmp/` (another root), `home/`
//! (the home directory), and `outside/`.

use std::path::PathBuf;

use codecoder_policy::CommandContext;

pub(crate) struct Workspace {
    // Kept alive for the directories' lifetime.
    _dir: tempfile::TempDir,
    pub(crate) ws: PathBuf,
    pub(crate) tmp: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) outside: PathBuf,
}

impl Workspace {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        // Canonical, so expected paths compare equal to resolved ones.
        let root = fs_err::canonicalize(dir.path()).expect("canonicalize");
        let ws = root.join("ws");
        let tmp = root.join("tmp");
        let home = root.join("home");
        let outside = root.join("outside");
        for path in [&ws, &tmp, &home, &outside, &ws.join("src"), &ws.join(".git")] {
            fs_err::create_dir_all(path).expect("mkdir");
        }
        Self { _dir: dir, ws, tmp, home, outside }
    }

    pub(crate) fn ctx(&self) -> CommandContext {
        CommandContext {
            cwd: self.ws.clone(),
            writable_roots: vec![self.ws.clone(), self.tmp.clone()],
            home: Some(self.home.clone()),
        }
    }
}
