//! `@path` completion: the workspace's files (as git would see them: `.gitignore` honoured),
//! listed by a background thread (`tui-file-index`) and ranked by nucleo's fuzzy matcher on the
//! UI thread.
//!
//! Invariants:
//! - The UI thread never walks the tree: it answers from the latest list the walker sent (none
//!   yet: no file items), and asks for a new walk when a turn ends or the list is older than
//!   `STALE`. Walks are coalesced: at most one runs and at most one more is queued.
//! - A keystroke's work is bounded: a cheap pass (each plain word of the query a subsequence of
//!   the path, ASCII case ignored) over every file when the query is new, and only over the
//!   previous query's survivors when it grew by plain characters (the survivors of a longer
//!   query are a subset, so narrowing gives what a fresh pass gives); then nucleo scores at most
//!   `SCORE_CAP` of the survivors (file-name matches and short paths first).
//! - Listing is bounded (`MAX_FILES`); paths are relative to the working directory, with `/`
//!   separators, stored packed in one string (a few bytes of overhead a file).
//! - Dropping the index stops a running walk early and joins the thread.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use codecoder_stdx::JoinOnDrop;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

/// The most files listed for completion.
const MAX_FILES: usize = 1_000_000;
/// Paths scored by nucleo in one keystroke at most (those the cheap pass ranks first).
const SCORE_CAP: usize = 2_000;
/// A list older than this is walked again when completion next asks for it.
const STALE: Duration = Duration::from_secs(30);

/// Paths packed into one string: `text[ends[i-1]..ends[i]]` is the `i`-th, sorted.
#[derive(Debug, Default)]
pub(crate) struct FileList {
    text: String,
    ends: Vec<u32>,
    /// Every path is ASCII (the cheap pass then needs no per-path check).
    all_ascii: bool,
}

impl FileList {
    /// Packs `paths`, sorted.
    pub(crate) fn new(mut paths: Vec<String>) -> Self {
        paths.sort_unstable();
        paths.dedup();
        let mut list = Self {
            text: String::with_capacity(paths.iter().map(String::len).sum()),
            ends: Vec::with_capacity(paths.len()),
            all_ascii: true,
        };
        for path in paths {
            let Ok(end) = u32::try_from(list.text.len() + path.len()) else { break };
            list.text.push_str(&path);
            list.ends.push(end);
        }
        list.all_ascii = list.text.is_ascii();
        list
    }

    /// How many paths.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The `index`-th path (empty when out of range).
    pub(crate) fn get(&self, index: usize) -> &str {
        let start = match index.checked_sub(1) {
            Some(previous) => self.ends.get(previous).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(index).copied().unwrap_or(start);
        self.text.get(start as usize..end as usize).unwrap_or_default()
    }

    /// Bytes held (for memory figures).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * std::mem::size_of::<u32>()
    }
}

/// The files under `cwd`, relative, hidden and ignored ones excluded; stops early (with what it
/// has) when `cancel` is set.
pub(crate) fn list_files(cwd: &Path, cancel: &AtomicBool) -> FileList {
    let mut files = Vec::new();
    for entry in ignore::WalkBuilder::new(cwd).build().flatten() {
        if files.len() >= MAX_FILES || cancel.load(Ordering::Relaxed) {
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(relative) = entry.path().strip_prefix(cwd) {
            let path = relative.to_string_lossy();
            files.push(if path.contains('\\') {
                path.replace('\\', "/")
            } else {
                path.into_owned()
            });
        }
    }
    FileList::new(files)
}

/// One query's matches, kept to narrow the next keystroke's pass.
#[derive(Debug)]
struct Narrowed {
    query: String,
    /// Indices into the list of every path the query matched, in list order.
    hits: Vec<u32>,
}

/// The workspace's file list for `@` completion: a walker thread and the latest list.
pub(crate) struct FileIndex {
    /// Asks the walker for a walk; dropped (in `Drop`) before the walker is joined.
    requests: Option<Sender<()>>,
    lists: Receiver<(Arc<FileList>, Duration)>,
    cancel: Arc<AtomicBool>,
    walker: Option<JoinOnDrop<()>>,
    current: Option<Arc<FileList>>,
    /// When the current list was received, and how long its walk took.
    built: Option<(Instant, Duration)>,
    /// A walk was asked for and its list has not come yet.
    pending: bool,
    matcher: Matcher,
    /// Earlier queries of the word being typed, each a prefix of the next.
    narrowed: Vec<Narrowed>,
}

impl std::fmt::Debug for FileIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileIndex")
            .field("files", &self.current.as_ref().map(|list| list.len()))
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl FileIndex {
    /// An index whose walker starts listing `cwd` at once. Without a thread (spawning failed),
    /// it stays empty.
    pub(crate) fn spawn(cwd: PathBuf) -> Self {
        // One walk running and one queued at most: later asks coalesce into the queued one.
        let (request_tx, request_rx) = crossbeam_channel::bounded::<()>(1);
        let (list_tx, list_rx) = crossbeam_channel::bounded(1);
        let cancel = Arc::new(AtomicBool::new(false));
        let walker = {
            let cancel = Arc::clone(&cancel);
            codecoder_stdx::spawn_named("tui-file-index", move || {
                for () in request_rx {
                    let started = Instant::now();
                    let walked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        list_files(&cwd, &cancel)
                    }));
                    if cancel.load(Ordering::Relaxed) {
                        break;
                    }
                    // A panicking walk leaves the previous list in place.
                    let Ok(list) = walked else { continue };
                    if list_tx.send((Arc::new(list), started.elapsed())).is_err() {
                        break;
                    }
                }
            })
            .ok()
        };
        let mut index = Self::with_parts(Some(request_tx), list_rx, cancel, walker, None);
        index.refresh();
        index
    }

    /// An index over a fixed list, with no walker (tests, benchmarks).
    pub(crate) fn fixed(paths: Vec<String>) -> Self {
        let (_, lists) = crossbeam_channel::bounded(1);
        let list = Arc::new(FileList::new(paths));
        Self::with_parts(None, lists, Arc::new(AtomicBool::new(false)), None, Some(list))
    }

    /// An index that lists nothing and has no walker (before one is started).
    pub(crate) fn none() -> Self {
        let (_, lists) = crossbeam_channel::bounded(1);
        Self::with_parts(None, lists, Arc::new(AtomicBool::new(false)), None, None)
    }

    fn with_parts(
        requests: Option<Sender<()>>,
        lists: Receiver<(Arc<FileList>, Duration)>,
        cancel: Arc<AtomicBool>,
        walker: Option<JoinOnDrop<()>>,
        current: Option<Arc<FileList>>,
    ) -> Self {
        let built = current.as_ref().map(|_| (Instant::now(), Duration::ZERO));
        Self {
            requests,
            lists,
            cancel,
            walker,
            current,
            built,
            pending: false,
            matcher: Matcher::new(Config::DEFAULT.match_paths()),
            narrowed: Vec::new(),
        }
    }

    /// Whether a walker thread backs this index.
    pub(crate) fn is_live(&self) -> bool {
        self.requests.is_some()
    }

    /// Asks for a new walk (the current list answers meanwhile); coalesces with a queued one.
    pub(crate) fn refresh(&mut self) {
        let Some(requests) = &self.requests else { return };
        match requests.try_send(()) {
            Ok(()) | Err(TrySendError::Full(())) => self.pending = true,
            Err(TrySendError::Disconnected(())) => {}
        }
    }

    /// Takes a list the walker finished, if any; true when the list changed.
    pub(crate) fn poll(&mut self) -> bool {
        let mut changed = false;
        while let Ok((list, took)) = self.lists.try_recv() {
            self.current = Some(list);
            self.built = Some((Instant::now(), took));
            self.narrowed.clear();
            self.pending = false;
            changed = true;
        }
        changed
    }

    /// The current list, if one was built.
    pub(crate) fn list(&self) -> Option<&Arc<FileList>> {
        self.current.as_ref()
    }

    /// How long the current list's walk took.
    pub(crate) fn walk_time(&self) -> Option<Duration> {
        self.built.map(|(_, took)| took)
    }

    /// The best `limit` paths for `query`, best first (the first `limit` in order for an empty
    /// query); nothing before the first list came. A stale list is refreshed in the background.
    pub(crate) fn complete(&mut self, query: &str, limit: usize) -> Vec<String> {
        self.poll();
        if let Some((at, _)) = self.built
            && at.elapsed() >= STALE
            && !self.pending
        {
            self.refresh();
        }
        let Some(list) = self.current.clone() else { return Vec::new() };
        if query.is_empty() {
            self.narrowed.clear();
            return (0..list.len().min(limit)).map(|i| list.get(i).to_owned()).collect();
        }
        // Keep the earlier queries this one extends by plain characters.
        while let Some(last) = self.narrowed.last() {
            if query.starts_with(last.query.as_str()) && narrows(&last.query, query) {
                break;
            }
            self.narrowed.pop();
        }
        // The cheap pass: every plain word of the query must be a subsequence of the path.
        let words: Vec<Vec<u8>> = query
            .split_whitespace()
            .filter(|word| word.chars().all(is_plain) && word.is_ascii())
            .map(|word| word.to_ascii_lowercase().into_bytes())
            .collect();
        // One pass: the survivors, and those of them whose file name holds the last word.
        let last_word = words.last().map_or(&[][..], Vec::as_slice);
        let all_ascii = list.all_ascii;
        let mut hits = Vec::new();
        let mut name_hits = Vec::new();
        let mut visit = |index: u32| {
            let path = list.get(index as usize);
            if !all_ascii && !path.is_ascii() {
                hits.push(index);
                name_hits.push(index);
                return;
            }
            if words.iter().all(|word| is_subsequence(path.as_bytes(), word)) {
                hits.push(index);
                let name = path.rfind('/').map_or(path, |at| path.get(at + 1..).unwrap_or(path));
                if is_subsequence(name.as_bytes(), last_word) {
                    name_hits.push(index);
                }
            }
        };
        match self.narrowed.last() {
            Some(last) => last.hits.iter().copied().for_each(&mut visit),
            None => (0..u32::try_from(list.len()).unwrap_or(u32::MAX)).for_each(&mut visit),
        }
        // The costly pass, nucleo's score, over a bounded number of them: file-name matches
        // first, then the shortest paths (ties in list order).
        let shortest = |mut pool: Vec<u32>, n: usize| {
            if pool.len() > n {
                let key = |index: &u32| (list.get(*index as usize).len(), *index);
                pool.select_nth_unstable_by_key(n.saturating_sub(1), key);
                pool.truncate(n);
            }
            pool
        };
        let chosen = if hits.len() <= SCORE_CAP {
            hits.clone()
        } else if name_hits.len() >= SCORE_CAP {
            shortest(name_hits, SCORE_CAP)
        } else {
            let named: std::collections::HashSet<u32> = name_hits.iter().copied().collect();
            let rest: Vec<u32> = hits.iter().copied().filter(|i| !named.contains(i)).collect();
            let mut chosen = name_hits;
            let room = SCORE_CAP - chosen.len();
            chosen.extend(shortest(rest, room));
            chosen
        };
        let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
        let mut buf = Vec::new();
        let mut scored: Vec<(u32, u32)> = Vec::with_capacity(chosen.len());
        for index in chosen {
            let path = list.get(index as usize);
            if let Some(score) = pattern.score(Utf32Str::new(path, &mut buf), &mut self.matcher) {
                scored.push((index, score));
            }
        }
        if query.chars().all(|c| is_plain(c) || c.is_whitespace())
            && self.narrowed.last().is_none_or(|last| last.query != query)
        {
            self.narrowed.push(Narrowed { query: query.to_owned(), hits });
        }
        best(&list, &mut scored, limit)
    }
}

/// A character with no meaning in nucleo's pattern syntax.
fn is_plain(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '!' | '^' | '\'' | '$' | '\\')
}

/// Whether `longer` (which starts with `shorter`) only adds plain characters and whitespace,
/// so its cheap pass keeps a subset of what `shorter`'s kept: a word grew or one was added.
fn narrows(shorter: &str, longer: &str) -> bool {
    let plain = |c: char| is_plain(c) || c.is_whitespace();
    shorter.chars().all(plain) && longer.chars().all(plain)
}

/// Whether `needle` (lowercase ASCII) is a subsequence of `haystack`, ignoring ASCII case.
fn is_subsequence(haystack: &[u8], needle: &[u8]) -> bool {
    let mut wanted = needle.iter();
    let Some(mut want) = wanted.next() else { return true };
    for byte in haystack {
        if byte.to_ascii_lowercase() == *want {
            match wanted.next() {
                Some(next) => want = next,
                None => return true,
            }
        }
    }
    false
}

/// The `limit` best of `scored` (index, score): higher score, then shorter path, then list
/// order.
fn best(list: &FileList, scored: &mut [(u32, u32)], limit: usize) -> Vec<String> {
    let rank = |a: &(u32, u32), b: &(u32, u32)| {
        b.1.cmp(&a.1)
            .then_with(|| list.get(a.0 as usize).len().cmp(&list.get(b.0 as usize).len()))
            .then_with(|| a.0.cmp(&b.0))
    };
    if limit == 0 {
        return Vec::new();
    }
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit - 1, rank);
    }
    let shown = limit.min(scored.len());
    let top = &mut scored[..shown];
    top.sort_unstable_by(rank);
    top.iter().map(|(index, _)| list.get(*index as usize).to_owned()).collect()
}

impl Drop for FileIndex {
    fn drop(&mut self) {
        // Stop a running walk, disconnect the walker's requests and its lists (a walker blocked
        // sending one wakes up), then join it.
        self.cancel.store(true, Ordering::Relaxed);
        self.requests = None;
        self.lists = crossbeam_channel::never();
        self.walker = None;
    }
}

#[cfg(test)]
mod tests;
