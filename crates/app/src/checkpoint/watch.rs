//! The change watcher: what a turn's commands changed in a git work tree, without walking or
//! hashing the tree at each turn.
//!
//! On the session's first turn a named thread (`checkpoint-watch`) finds the repository, reads
//! git's index, and walks the work tree once (what git does not ignore, nested repositories left
//! out): it puts an inotify watch on every directory and compares each file's `lstat` with the
//! index's stat data. A tracked file whose stat matches (and is not racily clean) is *clean*: its
//! content is the blob the index names. Every other file — modified, untracked, racily clean,
//! tracked but missing — starts out *changed*. From then on the thread reads the watches' events
//! and adds every path created, written, deleted or moved to the changed set (a new directory is
//! walked and watched at once; a directory moved or deleted away is kept as a directory, expanded
//! later from the frozen copy of the index and the paths known under it).
//!
//! A turn's first command calls `mark`: the changed set's current contents are kept as blobs
//! (reused while a path's stat is unchanged), and a per-turn set starts collecting events. When
//! the turn ends, `finish` gives each path the turn changed its content before the command: the
//! blob kept at the mark, else the index's blob of a clean path (one `git cat-file --batch`),
//! else absent (a new path, unless `git check-ignore` says git ignores it). Paths whose content
//! ends where it began are left out, as the snapshot diff left them out.
//!
//! Invariant: the watcher never guesses. Whenever it cannot vouch for what it saw — no inotify,
//! the watch limit, a queue overflow, an index it cannot read, a scan not finished in time — it
//! says so and the caller falls back to git's whole-tree snapshots for that turn; an overflow
//! makes the thread scan again before the next turn's mark.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use codecoder_protocol::ChangedBy;
use codecoder_sandbox::Environment;
use codecoder_session::checkpoint::{TurnCapture, content_hash};
use codecoder_session::{BlobStore, sha256_hex};
use codecoder_stdx::JoinOnDrop;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

use super::git::{GIT_BLOB_LIMIT, GitRepo};
use super::git_index::{self, Entry, OID_LEN};

/// How long a mark waits for the first scan of the tree.
const SCAN_WAIT: Duration = Duration::from_secs(60);
/// Past this many changed paths the thread scans the tree again (a fresh base is cheaper than
/// keeping that many contents at every turn).
const RESCAN_AT: usize = 20_000;

/// What each directory watch reports: everything that changes a directory's entries or a
/// file's content (not attributes).
fn watch_mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// The watcher of one session's work tree.
pub(crate) struct TreeWatch {
    shared: Arc<Shared>,
    wake: Option<std::io::PipeWriter>,
    // Dropped last: joined after `Drop` told the thread to stop.
    _thread: Option<JoinOnDrop<()>>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    stop: AtomicBool,
}

/// Where the watcher stands.
enum Phase {
    /// Finding the repository and scanning the tree.
    Scanning,
    /// Following the tree.
    Ready,
    /// Not in a git work tree: nothing to follow.
    NotRepo,
    /// The tree cannot be followed; the reason, for the checkpoint's note. `repo` (when known)
    /// still serves whole-tree snapshots.
    Failed(String),
}

struct State {
    phase: Phase,
    repo: Option<Arc<GitRepo>>,
    inotify: Option<Arc<Inotify>>,
    dirs: HashMap<WatchDescriptor, PathBuf>,
    /// Tracked files clean at the scan: hash of the absolute path → the index's object name.
    clean: Vec<(u64, [u8; OID_LEN])>,
    /// Files changed since the scan, or not clean at it.
    changed: HashSet<PathBuf>,
    /// Directories moved or deleted away since the scan.
    changed_dirs: HashSet<PathBuf>,
    /// Changed paths whose ignoredness is not known yet (new since the scan).
    unclassified: HashSet<PathBuf>,
    /// Paths git ignores: neither kept nor reported.
    ignored: HashSet<PathBuf>,
    /// The last content kept of a changed path, while its stat is the same.
    kept: HashMap<PathBuf, Kept>,
    /// The open turn's changes since its mark.
    turn: Option<TurnChanges>,
    /// Why events may have been missed since the scan (set by an overflow).
    lost: Option<String>,
    /// A copy of the index as the scan read it, to list the paths under a vanished directory.
    frozen_index: Option<PathBuf>,
    /// The root's ignore rules, to skip ignored new directories without walking them.
    root_ignore: Option<ignore::gitignore::Gitignore>,
    hasher: std::hash::RandomState,
}

#[derive(Clone)]
struct Kept {
    stamp: Stamp,
    blob: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    mtime: (i64, i64),
    ctime: (i64, i64),
    size: u64,
    ino: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            size: meta.size(),
            ino: meta.ino(),
        }
    }
}

/// What a turn changed since its mark.
struct TurnChanges {
    /// The content of every changed path at the mark (`None`: absent).
    priors: HashMap<PathBuf, Option<String>>,
    changed: HashSet<PathBuf>,
    changed_dirs: HashSet<PathBuf>,
    lost: Option<String>,
}

/// A path's content at a turn's mark.
pub(crate) enum Prior {
    /// Kept in the blob store (`None`: absent).
    Blob(Option<String>),
    /// The index's blob.
    Bytes(Vec<u8>),
}

/// Why a turn cannot be followed by the watcher.
pub(crate) enum Unwatched {
    /// Not a git work tree.
    NotRepo,
    /// A git work tree the watcher cannot follow: snapshot it instead.
    Fallback { repo: Option<Arc<GitRepo>>, reason: String },
}

impl TreeWatch {
    /// Starts watching the work tree containing `cwd` (git runs in `environment`; temporary
    /// files go under `index_dir`).
    pub(crate) fn start(cwd: PathBuf, environment: Environment, index_dir: PathBuf) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new()),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let (mut reader, wake) = match std::io::pipe() {
            Ok(pipe) => pipe,
            Err(err) => {
                shared.lock().phase =
                    Phase::Failed(format!("no pipe for the change watcher: {err}"));
                return Self { shared, wake: None, _thread: None };
            }
        };
        let thread_shared = Arc::clone(&shared);
        let thread = codecoder_stdx::spawn_named("checkpoint-watch", move || {
            run(&thread_shared, &cwd, environment, index_dir, &mut reader);
        });
        match thread {
            Ok(thread) => Self { shared, wake: Some(wake), _thread: Some(thread) },
            Err(err) => {
                shared.lock().phase = Phase::Failed(format!("no change watcher thread: {err}"));
                Self { shared, wake: None, _thread: None }
            }
        }
    }

    /// Marks the start of a turn's commands: waits (within `SCAN_WAIT`) for the scan, keeps the
    /// content of every changed path in `blobs`, and starts collecting the turn's changes.
    /// Notes for the checkpoint (files too large to keep) go to `notes`.
    pub(crate) fn mark(&self, blobs: &BlobStore, notes: &mut Vec<String>) -> Result<(), Unwatched> {
        let mut state = self.wait_ready()?;
        state.drain();
        if state.lost.is_some() {
            // Events were missed: scan again (the cost a whole-tree snapshot would have).
            state.phase = Phase::Scanning;
            drop(state);
            self.wake_thread();
            state = self.wait_ready()?;
            state.drain();
            if let Some(reason) = state.lost.clone() {
                return Err(state.fallback(reason));
            }
        }
        if let Err(reason) = state.classify() {
            return Err(state.fallback(reason));
        }
        let paths = match state.expanded(&state.changed.clone(), &state.changed_dirs.clone()) {
            Ok(paths) => paths,
            Err(reason) => return Err(state.fallback(reason)),
        };
        let mut priors = HashMap::with_capacity(paths.len());
        for path in paths {
            if state.ignored.contains(&path) {
                continue;
            }
            match state.keep(&path, blobs) {
                Ok(blob) => {
                    priors.insert(path, blob);
                }
                Err(note) => notes.push(note),
            }
        }
        state.turn = Some(TurnChanges {
            priors,
            changed: HashSet::new(),
            changed_dirs: HashSet::new(),
            lost: None,
        });
        Ok(())
    }

    /// Ends the turn's collection: adds to `capture` every path the turn's commands changed,
    /// with its content at the mark.
    pub(crate) fn finish(&self, capture: &mut TurnCapture) -> Result<(), String> {
        let mut state = self.shared.lock();
        state.drain();
        let Some(turn) = state.turn.take() else { return Ok(()) };
        let result = state.resolve(turn, capture);
        if state.changed.len() > RESCAN_AT || state.lost.is_some() {
            state.phase = Phase::Scanning;
            drop(state);
            self.wake_thread();
        }
        result
    }

    /// The content `path` had at the open turn's mark, when a command changed it since (a
    /// tool about to write it must keep that, not what the command left); `None` when no
    /// command touched it, or git ignores it.
    pub(crate) fn prior_at_mark(&self, path: &Path) -> Option<Result<Prior, String>> {
        let mut state = self.shared.lock();
        state.drain();
        let turn = state.turn.as_ref()?;
        let touched = turn.changed.contains(path)
            || turn.changed_dirs.iter().any(|dir| path.starts_with(dir));
        if !touched || state.ignored.contains(path) {
            return None;
        }
        if let Some(prior) = turn.priors.get(path) {
            return Some(Ok(Prior::Blob(prior.clone())));
        }
        let repo = state.repo.clone()?;
        if let Some(oid) = state.clean_oid(path) {
            let oid = hex(&oid);
            return Some(match repo.blobs(std::slice::from_ref(&oid)) {
                Ok(mut contents) => match contents.remove(&oid) {
                    Some(bytes) => Ok(Prior::Bytes(bytes)),
                    None => Err(format!("{}: its indexed content is gone", path.display())),
                },
                Err(err) => Err(err),
            });
        }
        match repo.ignored(&[path.to_owned()]) {
            Ok(ignored) if ignored.is_empty() => Some(Ok(Prior::Blob(None))),
            Ok(_) => None,
            Err(err) => Some(Err(err)),
        }
    }

    fn wait_ready(&self) -> Result<MutexGuard<'_, State>, Unwatched> {
        let deadline = Instant::now() + SCAN_WAIT;
        let mut state = self.shared.lock();
        loop {
            match &state.phase {
                Phase::Ready => return Ok(state),
                Phase::NotRepo => return Err(Unwatched::NotRepo),
                Phase::Failed(reason) => {
                    return Err(Unwatched::Fallback {
                        repo: state.repo.clone(),
                        reason: reason.clone(),
                    });
                }
                Phase::Scanning => {}
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(
                    state.fallback("the change watcher's scan did not finish in time".into())
                );
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn wake_thread(&self) {
        if let Some(wake) = &self.wake {
            let _ = (&*wake).write_all(b"w");
        }
    }
}

impl Drop for TreeWatch {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.wake_thread();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The watcher thread: scan, then follow events until told to stop; scan again when asked.
fn run(
    shared: &Shared,
    cwd: &Path,
    environment: Environment,
    index_dir: PathBuf,
    wake: &mut std::io::PipeReader,
) {
    // Frozen index copies that killed sessions left behind, whether or not this one is in a
    // repository.
    remove_stale_copies(&index_dir);
    let Some(repo) = GitRepo::detect(cwd, environment, index_dir) else {
        shared.lock().phase = Phase::NotRepo;
        shared.changed.notify_all();
        return;
    };
    let repo = Arc::new(repo);
    shared.lock().repo = Some(Arc::clone(&repo));
    if !repo.sha1 {
        return fail(shared, "the repository's object names are not SHA-1".into());
    }
    let inotify = match Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC) {
        Ok(inotify) => Arc::new(inotify),
        Err(err) => return fail(shared, format!("inotify is not available: {err}")),
    };
    shared.lock().inotify = Some(Arc::clone(&inotify));
    loop {
        if let Err(reason) = scan(shared, &repo, &inotify) {
            return fail(shared, reason);
        }
        // Follow events until the mark or finish asks for a new scan, or the session ends.
        loop {
            if shared.stop.load(Ordering::SeqCst) {
                return;
            }
            let mut fds = [
                PollFd::new(inotify.as_fd(), PollFlags::POLLIN),
                PollFd::new(wake.as_fd(), PollFlags::POLLIN),
            ];
            if poll(&mut fds, PollTimeout::NONE).is_err() {
                continue;
            }
            let woken = fds[1].revents().is_some_and(|flags| !flags.is_empty());
            if woken {
                let mut byte = [0u8; 64];
                let _ = wake.read(&mut byte);
            }
            if shared.stop.load(Ordering::SeqCst) {
                return;
            }
            let mut state = shared.lock();
            state.drain();
            if matches!(state.phase, Phase::Scanning) {
                break;
            }
        }
    }
}

fn fail(shared: &Shared, reason: String) {
    let mut state = shared.lock();
    state.phase = Phase::Failed(reason);
    // Closing the inotify descriptor removes every watch.
    state.inotify = None;
    state.dirs.clear();
    drop(state);
    shared.changed.notify_all();
}

/// One scan of the tree: reads the index, walks and watches, and installs the new base.
fn scan(shared: &Shared, repo: &GitRepo, inotify: &Arc<Inotify>) -> Result<(), String> {
    {
        let mut state = shared.lock();
        state.phase = Phase::Scanning;
        state.changed.clear();
        state.changed_dirs.clear();
        state.unclassified.clear();
        state.lost = None;
    }
    let ReadIndex { bytes, mtime: index_mtime, frozen } = read_index(repo)?;
    // Kept in the state at once, so that it is removed with it whatever happens next.
    if let Some(old) = shared.lock().frozen_index.replace(frozen) {
        let _ = fs_err::remove_file(old);
    }
    let entries = if bytes.is_empty() {
        Vec::new()
    } else {
        git_index::parse(&bytes).map_err(|err| err.0)?
    };
    let root = repo.root.clone();
    let by_path: HashMap<&[u8], usize> =
        entries.iter().enumerate().map(|(at, entry)| (&*entry.path, at)).collect();
    let visited: Vec<AtomicBool> = entries.iter().map(|_| AtomicBool::new(false)).collect();
    let found = Mutex::new(Found::default());
    let failure: Mutex<Option<String>> = Mutex::new(None);
    let context = WalkContext {
        shared,
        root: &root,
        inotify,
        by_path: &by_path,
        entries: &entries,
        visited: &visited,
        failure: &failure,
        index_mtime,
    };
    walker(&root).threads(2).build_parallel().run(|| {
        let mut batch = Batch { sink: &found, local: Found::default() };
        let context = &context;
        Box::new(move |entry| match entry {
            Ok(entry) => context.visit(&entry, &mut batch.local),
            Err(_) => ignore::WalkState::Continue,
        })
    });
    if shared.stop.load(Ordering::SeqCst) {
        return Err("the session ended".into());
    }
    if let Some(reason) = failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Err(reason);
    }
    let mut found = found.into_inner().unwrap_or_else(PoisonError::into_inner);
    let mut watched: HashSet<PathBuf> = found.dirs.iter().map(|(_, dir)| dir.clone()).collect();
    // Tracked paths the walk did not meet: deleted, or in a directory git's rules skip.
    for (at, entry) in entries.iter().enumerate() {
        if visited[at].load(Ordering::Relaxed) {
            continue;
        }
        let path = root.join(OsStr::from_bytes(&entry.path));
        match fs_err::symlink_metadata(&path) {
            Ok(meta) => {
                // Its directory and every unwatched one above it (an ignored directory's
                // rename moves the tracked file too).
                for dir in path.ancestors().skip(1) {
                    if !dir.starts_with(&root) || !watched.insert(dir.to_owned()) {
                        break;
                    }
                    match inotify.add_watch(dir, watch_mask()) {
                        Ok(wd) => found.dirs.push((wd, dir.to_owned())),
                        Err(err) => return Err(watch_error(dir, err)),
                    }
                }
                if entry.stat.matches(&meta) && !entry.stat.racy(index_mtime) {
                    found.clean.push(at);
                } else {
                    found.changed.push(path);
                }
            }
            Err(_) => found.changed.push(path),
        }
    }
    let mut state = shared.lock();
    let hasher = state.hasher.clone();
    let mut clean: Vec<(u64, [u8; OID_LEN])> = found
        .clean
        .iter()
        .map(|&at| {
            (hash_path(&hasher, &root.join(OsStr::from_bytes(&entries[at].path))), entries[at].oid)
        })
        .collect();
    clean.sort_unstable_by_key(|(hash, _)| *hash);
    state.clean = clean;
    state.dirs.extend(found.dirs);
    state.changed.extend(found.changed);
    state.root_ignore = root_ignore(repo);
    state.phase = Phase::Ready;
    // Events queued while the walk ran: after it, so they win.
    state.drain();
    drop(state);
    shared.changed.notify_all();
    Ok(())
}

/// What the walk found: files clean (index positions), files changed, directories watched.
#[derive(Default)]
struct Found {
    clean: Vec<usize>,
    changed: Vec<PathBuf>,
    dirs: Vec<(WatchDescriptor, PathBuf)>,
}

/// One walker thread's findings, merged into `sink` when the thread is done with it.
struct Batch<'a> {
    sink: &'a Mutex<Found>,
    local: Found,
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        let local = std::mem::take(&mut self.local);
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        sink.clean.extend(local.clean);
        sink.changed.extend(local.changed);
        sink.dirs.extend(local.dirs);
    }
}

/// What every walker thread reads.
struct WalkContext<'a> {
    shared: &'a Shared,
    inotify: &'a Inotify,
    root: &'a Path,
    by_path: &'a HashMap<&'a [u8], usize>,
    entries: &'a [Entry<'a>],
    visited: &'a [AtomicBool],
    failure: &'a Mutex<Option<String>>,
    index_mtime: (u32, u32),
}

impl WalkContext<'_> {
    /// Watches a directory; sorts a file into clean or changed.
    fn visit(&self, entry: &ignore::DirEntry, found: &mut Found) -> ignore::WalkState {
        if self.shared.stop.load(Ordering::Relaxed) {
            return ignore::WalkState::Quit;
        }
        let Some(kind) = entry.file_type() else { return ignore::WalkState::Continue };
        let path = entry.path();
        if kind.is_dir() {
            if entry.depth() > 0 && path.join(".git").exists() {
                return ignore::WalkState::Skip;
            }
            return match self.inotify.add_watch(path, watch_mask()) {
                Ok(wd) => {
                    found.dirs.push((wd, path.to_owned()));
                    ignore::WalkState::Continue
                }
                Err(err) => {
                    *self.failure.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(watch_error(path, err));
                    ignore::WalkState::Quit
                }
            };
        }
        let relative = path.strip_prefix(self.root).map_or(path, |relative| relative);
        let Some(&at) = self.by_path.get(relative.as_os_str().as_bytes()) else {
            found.changed.push(path.to_owned());
            return ignore::WalkState::Continue;
        };
        self.visited[at].store(true, Ordering::Relaxed);
        let stat = &self.entries[at].stat;
        let clean =
            entry.metadata().is_ok_and(|meta| stat.matches(&meta) && !stat.racy(self.index_mtime));
        if clean {
            found.clean.push(at);
        } else {
            found.changed.push(path.to_owned());
        }
        ignore::WalkState::Continue
    }
}

/// The walk git's rules allow: hidden files included, `.git` and nested repositories left out.
fn walker(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .ignore(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .parents(true)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

fn watch_error(path: &Path, err: nix::Error) -> String {
    match err {
        nix::Error::ENOSPC => format!(
            "the inotify watch limit (fs.inotify.max_user_watches) was reached at {}",
            path.display()
        ),
        err => format!("cannot watch {}: {err}", path.display()),
    }
}

/// The index as the scan read it (through one handle, so its stat and bytes are of one file).
struct ReadIndex {
    bytes: Vec<u8>,
    /// Its modification time, for the racy test.
    mtime: (u32, u32),
    /// A frozen copy of it.
    frozen: PathBuf,
}

fn read_index(repo: &GitRepo) -> Result<ReadIndex, String> {
    let path = repo.git_dir.join("index");
    let frozen = repo.temporary_index("base").map_err(|err| err.to_string())?;
    // Git replaces its index by renaming a new file over it, never in place, so a hard link
    // is a frozen copy at no cost; across file systems the bytes are copied.
    let linked = fs_err::hard_link(&path, &frozen).is_ok();
    let mut file = match fs_err::File::open(if linked { &frozen } else { &path }) {
        Ok(file) => file,
        // No index yet (nothing ever added): nothing is tracked.
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(ReadIndex { bytes: Vec::new(), mtime: (0, 0), frozen });
        }
        Err(err) => return Err(err.to_string()),
    };
    let meta = file.metadata().map_err(|err| err.to_string())?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.size()).unwrap_or_default());
    file.read_to_end(&mut bytes).map_err(|err| err.to_string())?;
    if !linked {
        fs_err::write(&frozen, &bytes).map_err(|err| err.to_string())?;
    }
    let mtime = (meta.mtime() as u32, meta.mtime_nsec() as u32);
    Ok(ReadIndex { bytes, mtime, frozen })
}

/// Removes the frozen index copies of processes that are gone (killed before they could).
fn remove_stale_copies(dir: &Path) {
    let Ok(entries) = fs_err::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, rest)) = name.to_str().and_then(|name| name.split_once('-')) else {
            continue;
        };
        if rest.starts_with("base-") && !Path::new("/proc").join(pid).exists() {
            let _ = fs_err::remove_file(entry.path());
        }
    }
}

/// The ignore rules of the root's `.gitignore` and the repository's `info/exclude`.
fn root_ignore(repo: &GitRepo) -> Option<ignore::gitignore::Gitignore> {
    let mut builder = ignore::gitignore::GitignoreBuilder::new(&repo.root);
    builder.add(repo.root.join(".gitignore"));
    builder.add(repo.git_dir.join("info").join("exclude"));
    builder.build().ok()
}

fn hash_path(hasher: &std::hash::RandomState, path: &Path) -> u64 {
    let mut state = hasher.build_hasher();
    state.write(path.as_os_str().as_bytes());
    state.finish()
}

fn hex(oid: &[u8; OID_LEN]) -> String {
    oid.iter().map(|byte| format!("{byte:02x}")).collect()
}

impl Drop for State {
    fn drop(&mut self) {
        if let Some(frozen) = self.frozen_index.take() {
            let _ = fs_err::remove_file(frozen);
        }
    }
}

impl State {
    fn new() -> Self {
        Self {
            phase: Phase::Scanning,
            repo: None,
            inotify: None,
            dirs: HashMap::new(),
            clean: Vec::new(),
            changed: HashSet::new(),
            changed_dirs: HashSet::new(),
            unclassified: HashSet::new(),
            ignored: HashSet::new(),
            kept: HashMap::new(),
            turn: None,
            lost: None,
            frozen_index: None,
            root_ignore: None,
            hasher: std::hash::RandomState::new(),
        }
    }

    fn fallback(&self, reason: String) -> Unwatched {
        Unwatched::Fallback { repo: self.repo.clone(), reason }
    }

    fn clean_oid(&self, path: &Path) -> Option<[u8; OID_LEN]> {
        let hash = hash_path(&self.hasher, path);
        let at = self.clean.binary_search_by_key(&hash, |(hash, _)| *hash).ok()?;
        Some(self.clean[at].1)
    }

    /// Reads every queued event.
    fn drain(&mut self) {
        let Some(inotify) = self.inotify.clone() else { return };
        loop {
            let events = match inotify.read_events() {
                Ok(events) if !events.is_empty() => events,
                _ => return,
            };
            for event in events {
                self.apply(&inotify, &event);
            }
        }
    }

    fn apply(&mut self, inotify: &Inotify, event: &nix::sys::inotify::InotifyEvent) {
        let mask = event.mask;
        if mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
            self.lose("the change watcher's event queue overflowed".into());
            return;
        }
        if mask.contains(AddWatchFlags::IN_IGNORED) {
            self.dirs.remove(&event.wd);
            return;
        }
        let Some(dir) = self.dirs.get(&event.wd) else { return };
        let Some(name) = &event.name else {
            // The watched directory itself went away: its entries came as events of its own.
            return;
        };
        let path = dir.join(name);
        if mask.contains(AddWatchFlags::IN_ISDIR) {
            if mask.intersects(AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO) {
                self.watch_new_dir(inotify, &path);
            }
            if mask.intersects(AddWatchFlags::IN_DELETE | AddWatchFlags::IN_MOVED_FROM) {
                self.changed_dirs.insert(path.clone());
                if let Some(turn) = &mut self.turn {
                    turn.changed_dirs.insert(path);
                }
            }
            return;
        }
        self.note_changed(path, true);
    }

    fn note_changed(&mut self, path: PathBuf, unknown: bool) {
        if self.ignored.contains(&path) {
            return;
        }
        if unknown && self.clean_oid(&path).is_none() && !self.changed.contains(&path) {
            self.unclassified.insert(path.clone());
        }
        if let Some(turn) = &mut self.turn {
            turn.changed.insert(path.clone());
        }
        self.changed.insert(path);
    }

    /// A directory appeared: watch it and everything under it, and count its files changed.
    fn watch_new_dir(&mut self, inotify: &Inotify, dir: &Path) {
        if dir.file_name() == Some(OsStr::new(".git")) {
            return;
        }
        if let Some(rules) = &self.root_ignore
            && rules.matched_path_or_any_parents(dir, true).is_ignore()
        {
            return;
        }
        let mut files = Vec::new();
        for entry in walker(dir).build().flatten() {
            let Some(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                if entry.depth() > 0 && entry.path().join(".git").exists() {
                    continue;
                }
                match inotify.add_watch(entry.path(), watch_mask()) {
                    Ok(wd) => {
                        self.dirs.insert(wd, entry.path().to_owned());
                    }
                    Err(err) => return self.lose(watch_error(entry.path(), err)),
                }
            } else {
                files.push(entry.into_path());
            }
        }
        for file in files {
            // The walk applied git's rules: these are not ignored.
            self.note_changed(file, false);
        }
    }

    fn lose(&mut self, reason: String) {
        if let Some(turn) = &mut self.turn {
            turn.lost.get_or_insert_with(|| reason.clone());
        }
        self.lost.get_or_insert(reason);
    }

    /// Asks git which new paths it ignores, and drops those from the changed set.
    fn classify(&mut self) -> Result<(), String> {
        if self.unclassified.is_empty() {
            return Ok(());
        }
        let Some(repo) = self.repo.clone() else { return Ok(()) };
        let paths: Vec<PathBuf> = self.unclassified.drain().collect();
        let ignored = repo.ignored(&paths)?;
        for path in ignored {
            self.changed.remove(&path);
            self.kept.remove(&path);
            self.ignored.insert(path);
        }
        Ok(())
    }

    /// `files` plus every path that was under one of `dirs`: tracked there in the frozen index,
    /// or known changed there.
    fn expanded(
        &self,
        files: &HashSet<PathBuf>,
        dirs: &HashSet<PathBuf>,
    ) -> Result<Vec<PathBuf>, String> {
        let mut paths: HashSet<PathBuf> = files.clone();
        if !dirs.is_empty() {
            let dirs: Vec<PathBuf> = dirs.iter().cloned().collect();
            if let (Some(repo), Some(index)) = (&self.repo, &self.frozen_index) {
                paths.extend(repo.tracked_under(index, &dirs)?);
            }
            let under = |path: &Path| dirs.iter().any(|dir| path.starts_with(dir));
            paths.extend(self.changed.iter().filter(|path| under(path)).cloned());
            paths.extend(self.kept.keys().filter(|path| under(path)).cloned());
        }
        Ok(paths.into_iter().collect())
    }

    /// Keeps `path`'s current content (`None`: absent), reusing the last blob while its stat
    /// is the same.
    fn keep(&mut self, path: &Path, blobs: &BlobStore) -> Result<Option<String>, String> {
        let meta = match fs_err::metadata(path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(format!("{}: not checkpointed: {err}", path.display())),
        };
        if meta.is_dir() {
            return Ok(None);
        }
        let stamp = Stamp::of(&meta);
        if let Some(kept) = self.kept.get(path)
            && kept.stamp == stamp
        {
            return Ok(kept.blob.clone());
        }
        if meta.size() > GIT_BLOB_LIMIT as u64 {
            return Err(format!("{}: too large to checkpoint", path.display()));
        }
        let bytes = fs_err::read(path)
            .map_err(|err| format!("{}: not checkpointed: {err}", path.display()))?;
        let blob = blobs
            .put_unsynced(&bytes)
            .map_err(|err| format!("{}: not checkpointed: {err}", path.display()))?;
        self.kept.insert(path.to_owned(), Kept { stamp, blob: Some(blob.clone()) });
        Ok(Some(blob))
    }

    /// Adds what `turn` changed to `capture`, each path with its content at the mark.
    fn resolve(&mut self, turn: TurnChanges, capture: &mut TurnCapture) -> Result<(), String> {
        if let Some(reason) = turn.lost {
            return Err(reason);
        }
        let Some(repo) = self.repo.clone() else { return Ok(()) };
        let paths = self.expanded(&turn.changed, &turn.changed_dirs)?;
        let mut from_index: Vec<(PathBuf, String)> = Vec::new();
        let mut new_paths: Vec<PathBuf> = Vec::new();
        for path in paths {
            if capture.contains(&path) || self.ignored.contains(&path) {
                continue;
            }
            if let Some(prior) = turn.priors.get(&path) {
                let now = content_hash(&path).ok().flatten();
                if now != *prior {
                    capture.add_prior_blob(&path, prior.clone(), ChangedBy::Shell);
                }
            } else if let Some(oid) = self.clean_oid(&path) {
                from_index.push((path, hex(&oid)));
            } else {
                new_paths.push(path);
            }
        }
        let oids: Vec<String> = from_index.iter().map(|(_, oid)| oid.clone()).collect();
        let contents = repo.blobs(&oids)?;
        for (path, oid) in from_index {
            let Some(bytes) = contents.get(&oid) else {
                capture.add_note(format!(
                    "{}: its indexed content is gone; not checkpointed",
                    path.display()
                ));
                continue;
            };
            if bytes.len() > GIT_BLOB_LIMIT {
                capture.add_note(format!("{}: too large to checkpoint", path.display()));
                continue;
            }
            let now = content_hash(&path).ok().flatten();
            if now.as_deref() != Some(sha256_hex(bytes).as_str()) {
                capture.add_prior(&path, Some(bytes), ChangedBy::Shell);
            }
        }
        let ignored = repo.ignored(&new_paths)?;
        for path in new_paths {
            if ignored.contains(&path) {
                self.changed.remove(&path);
                self.unclassified.remove(&path);
                self.ignored.insert(path);
                continue;
            }
            self.unclassified.remove(&path);
            if path.symlink_metadata().is_ok() {
                capture.add_prior(&path, None, ChangedBy::Shell);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
