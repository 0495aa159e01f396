//! The git work tree a session runs in, as checkpoints use it: detection, whole-tree snapshots
//! into a temporary index (the fallback when the change watcher cannot follow the tree), and the
//! batch look-ups the watcher needs (blobs by object name, which paths git ignores, the tracked
//! paths under a directory of a frozen index).
//!
//! Invariant: git runs only through `sandbox`, in the command environment, in the work tree's
//! root, bounded in time; the repository's real index and refs are never written.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use codecoder_protocol::{ChangedBy, env};
use codecoder_sandbox::{CommandSpec, Environment, SpawnConfig, Wait};
use codecoder_session::checkpoint::TurnCapture;

/// The most a git command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest prior content kept from git (bigger files get a note instead).
pub(crate) const GIT_BLOB_LIMIT: usize = 64 << 20;
/// The most `cat-file --batch` may print in one call.
const BATCH_LIMIT: usize = 1 << 30;
/// Git's mode of a submodule entry.
const SUBMODULE_MODE: &str = "160000";
/// Git's mode of a missing entry.
const ABSENT_MODE: &str = "000000";

/// A git work tree.
pub(crate) struct GitRepo {
    pub(crate) root: PathBuf,
    pub(crate) git_dir: PathBuf,
    /// Whether object names are SHA-1 (the index reader knows no other).
    pub(crate) sha1: bool,
    environment: Environment,
    /// Where temporary index files go (the session's blob directory).
    pub(crate) index_dir: PathBuf,
}

impl GitRepo {
    /// The work tree containing `cwd`, if any.
    pub(crate) fn detect(cwd: &Path, environment: Environment, index_dir: PathBuf) -> Option<Self> {
        codecoder_context::find_project_root(cwd)?;
        let probe = Self {
            root: cwd.to_owned(),
            git_dir: PathBuf::new(),
            sha1: false,
            environment,
            index_dir,
        };
        let out = probe
            .git(&["rev-parse", "--show-toplevel", "--absolute-git-dir", "--show-object-format"])
            .ok()?;
        let text = String::from_utf8_lossy(&out).into_owned();
        let mut lines = text.lines();
        let root = PathBuf::from(lines.next()?);
        let git_dir = PathBuf::from(lines.next()?);
        let sha1 = lines.next() == Some("sha1");
        Some(Self { root, git_dir, sha1, ..probe })
    }

    /// Runs git in the work tree's root; stdout on success.
    pub(crate) fn git(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        self.run(args, &[], None, &[0])
    }

    /// Runs git with `env` set and `stdin` fed; stdout when it exits with one of `ok`.
    fn run(
        &self,
        args: &[&str],
        vars: &[(&str, &Path)],
        stdin: Option<Vec<u8>>,
        ok: &[i32],
    ) -> Result<Vec<u8>, String> {
        let mut spec = CommandSpec::new("git", args.iter().copied());
        spec.cwd = Some(self.root.clone());
        spec.stdin = stdin;
        for (name, value) in vars {
            spec.env.push(((*name).into(), value.as_os_str().to_owned()));
        }
        let config =
            SpawnConfig { environment: self.environment.clone(), ..SpawnConfig::standard() };
        let wait = Wait::within(GIT_TIMEOUT);
        let collected = codecoder_sandbox::output(&spec, &config, &wait, BATCH_LIMIT)
            .map_err(|err| format!("git {}: {err}", args.join(" ")))?;
        let code = match collected.outcome {
            codecoder_sandbox::Outcome::Exited(status) => status.code(),
            _ => None,
        };
        if !code.is_some_and(|code| ok.contains(&code)) {
            return Err(format!(
                "git {} failed: {}",
                args.join(" "),
                collected.stderr_text().trim()
            ));
        }
        Ok(collected.stdout)
    }

    /// A path for a temporary index file, unique in this process.
    pub(crate) fn temporary_index(&self, what: &str) -> std::io::Result<PathBuf> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        fs_err::create_dir_all(&self.index_dir)?;
        Ok(self.index_dir.join(format!(
            "{}-{what}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )))
    }

    /// The work tree as a tree object (tracked and untracked, not ignored, files).
    pub(crate) fn snapshot(&self) -> Result<String, String> {
        let index = self.temporary_index("snapshot").map_err(|err| err.to_string())?;
        // Starting from the real index lets git skip rehashing files whose stat is unchanged.
        let real = self.git_dir.join("index");
        if real.exists() {
            fs_err::copy(&real, &index).map_err(|err| err.to_string())?;
        }
        let vars = [(env::GIT_INDEX_FILE, index.as_path())];
        let tree = self
            .run(&["add", "-A", "--", "."], &vars, None, &[0])
            .and_then(|_| self.run(&["write-tree"], &vars, None, &[0]));
        let _ = fs_err::remove_file(&index);
        Ok(String::from_utf8_lossy(&tree?).trim().to_owned())
    }

    /// Keeps, in `capture`, every path that differs between `start` and the work tree now and
    /// that no tool wrote, with its content in `start`.
    pub(crate) fn add_changes(&self, start: &str, capture: &mut TurnCapture) -> Result<(), String> {
        let end = self.snapshot()?;
        if end == start {
            return Ok(());
        }
        let raw = self.git(&["diff-tree", "-r", "-z", "--no-renames", start, &end])?;
        let mut fields = raw.split(|byte| *byte == 0).filter(|field| !field.is_empty());
        while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
            let meta = String::from_utf8_lossy(meta);
            let mut parts = meta.trim_start_matches(':').split(' ');
            let (Some(old_mode), Some(new_mode), Some(old_sha)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(format!("unexpected git diff-tree output `{meta}`"));
            };
            let path = self.root.join(OsStr::from_bytes(path));
            if capture.contains(&path) {
                continue;
            }
            if old_mode == SUBMODULE_MODE || new_mode == SUBMODULE_MODE {
                capture.add_note(format!("{}: a submodule; not checkpointed", path.display()));
                continue;
            }
            if old_mode == ABSENT_MODE {
                capture.add_prior(&path, None, ChangedBy::Shell);
                continue;
            }
            let bytes = self.git(&["cat-file", "blob", old_sha])?;
            if bytes.len() > GIT_BLOB_LIMIT {
                capture.add_note(format!("{}: too large to checkpoint", path.display()));
                continue;
            }
            capture.add_prior(&path, Some(&bytes), ChangedBy::Shell);
        }
        Ok(())
    }

    /// The contents of the blobs named `oids` (hex), by name; a missing one is left out.
    pub(crate) fn blobs(&self, oids: &[String]) -> Result<HashMap<String, Vec<u8>>, String> {
        let mut found = HashMap::new();
        if oids.is_empty() {
            return Ok(found);
        }
        let input = oids.iter().flat_map(|oid| [oid.as_bytes(), b"\n"]).flatten().copied();
        let out = self.run(&["cat-file", "--batch"], &[], Some(input.collect()), &[0])?;
        let mut rest = out.as_slice();
        while !rest.is_empty() {
            let Some(end) = rest.iter().position(|byte| *byte == b'\n') else { break };
            let header = String::from_utf8_lossy(&rest[..end]).into_owned();
            rest = &rest[end + 1..];
            let mut parts = header.split(' ');
            let (Some(oid), Some(kind)) = (parts.next(), parts.next()) else { break };
            if kind == "missing" {
                continue;
            }
            let size: usize = parts
                .next()
                .and_then(|size| size.parse().ok())
                .ok_or_else(|| format!("unexpected git cat-file output `{header}`"))?;
            let content = rest.get(..size).ok_or("git cat-file output cut short")?;
            found.insert(oid.to_owned(), content.to_vec());
            rest = rest.get(size + 1..).unwrap_or_default();
        }
        Ok(found)
    }

    /// Which of `paths` (absolute, in the work tree) git ignores.
    pub(crate) fn ignored(&self, paths: &[PathBuf]) -> Result<HashSet<PathBuf>, String> {
        if paths.is_empty() {
            return Ok(HashSet::new());
        }
        let input = paths.iter().flat_map(|path| [path.as_os_str().as_bytes(), b"\0"]).flatten();
        // Exit 1: none of them is ignored.
        let out = self.run(
            &["check-ignore", "-z", "--stdin"],
            &[],
            Some(input.copied().collect()),
            &[0, 1],
        )?;
        Ok(split_paths(&out, &self.root))
    }

    /// The paths (absolute) the index file `index` tracks under the directories `dirs`.
    pub(crate) fn tracked_under(
        &self,
        index: &Path,
        dirs: &[PathBuf],
    ) -> Result<Vec<PathBuf>, String> {
        let mut args = vec!["ls-files", "-z", "--cached", "--full-name", "--"];
        let dirs: Vec<String> = dirs.iter().map(|dir| dir.to_string_lossy().into_owned()).collect();
        args.extend(dirs.iter().map(String::as_str));
        let out = self.run(&args, &[(env::GIT_INDEX_FILE, index)], None, &[0])?;
        Ok(split_paths(&out, &self.root).into_iter().collect())
    }
}

/// NUL-separated paths from git, made absolute under `root` (git prints them relative to it).
fn split_paths(out: &[u8], root: &Path) -> HashSet<PathBuf> {
    out.split(|byte| *byte == 0)
        .filter(|field| !field.is_empty())
        .map(|field| {
            let path = Path::new(OsStr::from_bytes(field));
            if path.is_absolute() { path.to_owned() } else { root.join(path) }
        })
        .collect()
}
