//! `@path` completion: the workspace's files (as git would see them: `.gitignore` honoured)
//! ranked by nucleo's fuzzy matcher.
//!
//! Invariants: listing is bounded (`MAX_FILES`) so a huge tree cannot stall the UI for long;
//! paths are relative to the working directory, with `/` separators.

use std::path::Path;

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher};

/// The most files listed for completion.
const MAX_FILES: usize = 20_000;

/// The files under `cwd`, relative, hidden and ignored ones excluded.
pub(crate) fn list_files(cwd: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in ignore::WalkBuilder::new(cwd).build().flatten() {
        if files.len() >= MAX_FILES {
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(relative) = entry.path().strip_prefix(cwd) {
            files.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    files.sort();
    files
}

/// The best `limit` matches of `query` among `candidates`, best first; all (up to `limit`,
/// in order) for an empty query.
pub(crate) fn fuzzy(query: &str, candidates: &[String], limit: usize) -> Vec<String> {
    if query.is_empty() {
        return candidates.iter().take(limit).cloned().collect();
    }
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
    let mut matches = pattern.match_list(candidates.iter(), &mut matcher);
    matches.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.len().cmp(&b.0.len())));
    matches.into_iter().take(limit).map(|(path, _)| path.clone()).collect()
}
