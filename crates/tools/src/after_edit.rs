//! What runs after a file tool changed files (`write_file`, `edit`, `apply_patch`): the
//! product's [`AfterEdit`] (formatters, then the language servers' diagnostics), whose text is
//! added to the tool's result.
//!
//! The same hook hears of the files `read_file` read and `grep` / `glob` found
//! ([`AfterEdit::touched`]), so that a language server can start before the edit that needs it.
//!
//! Invariants: it runs only after a successful change (an error result is returned as it is),
//! on the absolute paths the call's view names; its text joins the result's first text item, so
//! every front-end that shows the result shows it; it cannot fail the edit. `touched` changes no
//! result and must return at once.

use std::path::PathBuf;
use std::sync::Arc;

use codecoder_kernel::{InputReader, ToolKind, ToolOutput};
use codecoder_protocol::{CallView, ContentItem, ToolError};
use serde_json::Value;

use crate::{Builtin, CallEnv};

/// Called after an edit tool changed files.
pub trait AfterEdit: Send + Sync + std::fmt::Debug {
    /// Does what follows an edit of `paths` (absolute; a deleted file may be among them) and
    /// returns what to add to the result (empty: nothing). Bounded in time; never fails.
    fn after_edit(&self, paths: &[PathBuf]) -> String;

    /// Hears of files a read-only tool read (`read`: true) or found (absolute paths; any of
    /// them may not exist). Returns at once; by default does nothing.
    fn touched(&self, paths: &[PathBuf], read: bool) {
        let _ = (paths, read);
    }
}

/// Lines of a search's result looked at for the files it found.
const TOUCHED_LINES: usize = 200;

/// `builtin` with `hook` run after its successful calls, when it is an edit tool (or told of
/// the files it read or found, when it is `read_file`, `grep` or `glob`); else `builtin` as it
/// is.
pub(crate) fn wrap(
    builtin: Arc<dyn Builtin>,
    hook: Option<&Arc<dyn AfterEdit>>,
    cwd: &std::path::Path,
) -> Arc<dyn Builtin> {
    let Some(hook) = hook else { return builtin };
    let mode = if builtin.kind() == ToolKind::Edit {
        Mode::AfterEdit
    } else if matches!(builtin.name(), "read_file" | "grep" | "glob") {
        Mode::Touched
    } else {
        return builtin;
    };
    Arc::new(WithHook { inner: builtin, hook: Arc::clone(hook), cwd: cwd.to_path_buf(), mode })
}

/// What the hook hears of a wrapped tool's successful calls.
#[derive(Clone, Copy)]
enum Mode {
    /// An edit tool: the files it changed, and the hook's text joins the result.
    AfterEdit,
    /// A read-only tool: the files it read or found; the result is unchanged.
    Touched,
}

/// A tool with the hook attached.
struct WithHook {
    inner: Arc<dyn Builtin>,
    hook: Arc<dyn AfterEdit>,
    cwd: PathBuf,
    mode: Mode,
}

impl Builtin for WithHook {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn description(&self) -> &'static str {
        self.inner.description()
    }
    fn schema(&self) -> Value {
        self.inner.schema()
    }
    fn kind(&self) -> ToolKind {
        self.inner.kind()
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        self.inner.permission_keys(args)
    }
    fn summary(&self, args: &Value) -> String {
        self.inner.summary(args)
    }
    fn view(&self, args: &Value) -> CallView {
        self.inner.view(args)
    }
    fn offered(&self) -> bool {
        self.inner.offered()
    }
    fn check(&self, args: &Value) -> Result<(), String> {
        self.inner.check(args)
    }
    fn input_reader(&self) -> Option<Box<dyn InputReader>> {
        self.inner.input_reader()
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let view = self.inner.view(&args);
        let output = self.inner.run(env, args)?;
        if output.is_error {
            return Ok(output);
        }
        Ok(match self.mode {
            Mode::AfterEdit => self.after_edit(&view, output),
            Mode::Touched => {
                self.touched(&view, &output);
                output
            }
        })
    }
}

impl WithHook {
    /// Tells the hook of the files a read-only call read or found.
    fn touched(&self, view: &CallView, output: &ToolOutput) {
        if self.inner.name() == "read_file" {
            let paths: Vec<PathBuf> = view
                .paths
                .iter()
                .filter(|path| !path.is_empty())
                .map(|path| self.cwd.join(path))
                .collect();
            self.hook.touched(&paths, true);
            return;
        }
        // A search's lines start with the path found (`glob`: the whole line; `grep`: up to
        // the first `:`).
        let mut paths: Vec<PathBuf> = Vec::new();
        for item in &output.content {
            let ContentItem::Text { text } = item else { continue };
            for line in text.lines().take(TOUCHED_LINES) {
                let named = line.split_once(':').map_or(line, |(path, _)| path);
                if !named.is_empty() && !named.starts_with('(') {
                    paths.push(self.cwd.join(named));
                }
            }
        }
        self.hook.touched(&paths, false);
    }

    /// Runs the hook on the files an edit changed and adds its text to the result.
    fn after_edit(&self, view: &CallView, mut output: ToolOutput) -> ToolOutput {
        let mut paths: Vec<PathBuf> = Vec::new();
        let named = view.paths.iter().chain(view.changes.iter().map(|change| &change.path));
        for path in named.filter(|path| !path.is_empty()) {
            let path = self.cwd.join(path);
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        let note = self.hook.after_edit(&paths);
        if note.is_empty() {
            return output;
        }
        match output.content.iter_mut().find_map(|item| match item {
            ContentItem::Text { text } => Some(text),
            _ => None,
        }) {
            Some(text) => {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push('\n');
                text.push_str(&note);
            }
            None => output.content.push(ContentItem::Text { text: note }),
        }
        output
    }
}

#[cfg(test)]
mod tests;
