//! `apply_patch {input}`: codex's patch format (the `codecoder-apply-patch` crate), as a tool.
//!
//! Every path the patch touches (and every move destination) is a permission key (`edit:PATH`,
//! so the approval chain sees each one) and is checked against the writable roots and the
//! symlink guard (`path::resolve_writable`) before anything is written, so a patch either starts
//! inside the roots or not at all.
//! Invariant: a patch that does not parse changes nothing: it is refused as invalid arguments
//! before it is approved (`check`), with the parser's line-numbered message; a patch that fails midway says which files it had
//! already changed (the format is not atomic).

use std::sync::Arc;

use codecoder_apply_patch::{Hunk, PatchStream};
use codecoder_kernel::{InputReader, ToolKind, ToolOutput};
use codecoder_protocol::{
    CallKind, CallView, ChangeKind, ContentItem, FileChange, TextEdit, ToolError,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::partial_json::StringField;
use crate::path::resolve_writable;
use crate::{Builtin, Shared, parse_args, str_arg};

pub(crate) struct ApplyPatch(pub(crate) Arc<Shared>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatchArgs {
    input: String,
}

impl Builtin for ApplyPatch {
    fn name(&self) -> &'static str {
        "apply_patch"
    }
    fn description(&self) -> &'static str {
        "Edits files with a patch: `*** Begin Patch`, then for each file `*** Add File: PATH` \
         (every line prefixed with +), `*** Delete File: PATH`, or `*** Update File: PATH` \
         (optionally `*** Move to: NEW`) followed by chunks that start with `@@` (optionally \
         `@@ a line to seek to`) and lines prefixed with ' ' (context, about 3 lines around each \
         change), '-' (remove) or '+' (add); then `*** End Patch`. Paths are relative to the \
         working directory. Prefer this for multi-line or multi-file edits."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "input": { "type": "string", "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`." }
            },
            "required": ["input"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        codecoder_apply_patch::declared_paths(str_arg(args, "input"))
            .into_iter()
            .map(|path| format!("edit:{path}"))
            .collect()
    }
    fn summary(&self, args: &Value) -> String {
        let paths = codecoder_apply_patch::declared_paths(str_arg(args, "input"));
        format!("patch {}", paths.join(", "))
    }
    fn view(&self, args: &Value) -> CallView {
        let input = str_arg(args, "input");
        let paths = codecoder_apply_patch::declared_paths(input);
        let changes = match codecoder_apply_patch::parse(input) {
            Ok(patch) => patch.hunks_as_written().map(file_change).collect(),
            Err(_) => Vec::new(),
        };
        patch_view(paths, changes)
    }
    fn check(&self, args: &Value) -> Result<(), String> {
        // A patch that does not parse is refused before it is approved, with the line to fix.
        codecoder_apply_patch::parse(str_arg(args, "input"))
            .map(drop)
            .map_err(|err| format!("the patch does not parse: {err}"))
    }
    fn input_reader(&self) -> Option<Box<dyn InputReader>> {
        Some(Box::new(PatchReader {
            field: StringField::new("input"),
            stream: PatchStream::new(),
            text: String::new(),
            shown: 0,
        }))
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: PatchArgs = parse_args(args)?;
        // A patch that does not parse is the tool's answer (with the line to fix), as in codex.
        let patch = match codecoder_apply_patch::parse(&args.input) {
            Ok(patch) => patch,
            Err(err) => return Ok(ToolOutput::error(format!("the patch does not parse: {err}"))),
        };
        let config = &self.0.config;
        let mut touched = Vec::new();
        for hunk in patch.hunks() {
            touched.push(resolve_writable(config, &hunk.path().to_string_lossy())?);
            if let Hunk::Update { move_to: Some(to), .. } = hunk {
                touched.push(resolve_writable(config, &to.to_string_lossy())?);
            }
        }
        if env.cancel().is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        for path in &touched {
            env.checkpoint(path);
        }
        let output = if config.file_access.is_some() {
            apply_through(config, env, &patch)
        } else {
            match codecoder_apply_patch::apply(&patch, &config.cwd) {
                Ok(report) => ToolOutput::text(report.to_string()),
                Err(err) => ToolOutput::error(err.to_string()),
            }
        };
        Ok(with_placeholder_advice(output, &args.input))
    }
}

/// A failed patch whose text holds a redaction placeholder, with why its lines cannot match
/// and what works instead (`edit`'s advice).
fn with_placeholder_advice(mut output: ToolOutput, patch: &str) -> ToolOutput {
    if output.is_error
        && let Some(advice) = crate::edit::redacted_placeholder_advice(patch)
    {
        output.content.push(ContentItem::Text { text: format!("The patch {advice}") });
    }
    output
}

/// The view of a patch that names `paths` and makes `changes`.
fn patch_view(paths: Vec<String>, changes: Vec<FileChange>) -> CallView {
    let shown = paths.join(", ");
    CallView {
        kind: CallKind::Edit,
        title: format!("Patch {shown}"),
        detail: shown,
        paths,
        changes,
        ..CallView::default()
    }
}

/// A patch call while the model writes it: the `input` field decoded as it streams, read line
/// by line by the patch format's streaming reader.
struct PatchReader {
    field: StringField,
    stream: PatchStream,
    /// Decoded text not yet given to the stream.
    text: String,
    /// The stream's line count at the last view.
    shown: usize,
}

impl InputReader for PatchReader {
    fn push(&mut self, delta: &str) {
        self.field.push(delta, &mut self.text);
        self.stream.push(&self.text);
        self.text.clear();
    }

    fn view(&mut self) -> Option<CallView> {
        let lines = self.stream.lines_read();
        if lines == self.shown {
            return None;
        }
        self.shown = lines;
        let mut paths = Vec::new();
        let mut changes = Vec::new();
        for (hunk, header, body) in self.stream.hunks_as_written() {
            paths.push(hunk.path().to_string_lossy().into_owned());
            if let Hunk::Update { move_to: Some(to), .. } = &hunk {
                paths.push(to.to_string_lossy().into_owned());
            }
            changes.push(file_change((&hunk, header, body)));
        }
        // Nothing worth showing before the first file line.
        if changes.is_empty() {
            return None;
        }
        Some(patch_view(paths, changes))
    }
}

/// Applies `patch` hunk by hunk with file contents read and written through the config's file
/// access (an editor's buffers), the disk where it has no say (deletions, the source of a
/// move). The report and the failure read like `codecoder_apply_patch::apply`'s.
fn apply_through(
    config: &crate::ToolsConfig,
    env: &dyn CallEnv,
    patch: &codecoder_apply_patch::Patch,
) -> ToolOutput {
    let mut done: Vec<String> = Vec::new();
    for hunk in patch.hunks() {
        let shown = hunk.path().display().to_string();
        let step = (|| -> Result<String, String> {
            let full = resolve_writable(config, &hunk.path().to_string_lossy())
                .map_err(|err| err.to_string())?;
            match hunk {
                Hunk::Add { contents, .. } => {
                    write_text(config, env, &full, contents)?;
                    Ok(format!("A {shown}"))
                }
                Hunk::Delete { .. } => {
                    fs_err::remove_file(&full).map_err(|err| err.to_string())?;
                    Ok(format!("D {shown}"))
                }
                Hunk::Update { path, move_to, chunks } => {
                    let text = match crate::files::read_through(config, &full, env.cancel())
                        .map_err(|err| err.to_string())?
                    {
                        Some(text) => text,
                        None => fs_err::read_to_string(&full).map_err(|err| err.to_string())?,
                    };
                    let new_text = codecoder_apply_patch::update_text(&text, chunks, path)
                        .map_err(|err| err.to_string())?;
                    let Some(to) = move_to else {
                        write_text(config, env, &full, &new_text)?;
                        return Ok(format!("M {shown}"));
                    };
                    let destination = resolve_writable(config, &to.to_string_lossy())
                        .map_err(|err| err.to_string())?;
                    write_text(config, env, &destination, &new_text)?;
                    if destination != full {
                        fs_err::remove_file(&full).map_err(|err| err.to_string())?;
                    }
                    Ok(format!("M {}", to.display()))
                }
            }
        })();
        match step {
            Ok(line) => done.push(line),
            Err(message) => {
                let before = if done.is_empty() {
                    String::new()
                } else {
                    format!("\nChanged before the failure (not rolled back):\n{}", done.join("\n"))
                };
                return ToolOutput::error(format!("{message}{before}"));
            }
        }
    }
    ToolOutput::text(format!("Success. Updated the following files:\n{}\n", done.join("\n")))
}

/// Writes `text` through the file access, or to the disk (parents created) when it has no say.
fn write_text(
    config: &crate::ToolsConfig,
    env: &dyn CallEnv,
    path: &std::path::Path,
    text: &str,
) -> Result<(), String> {
    if crate::files::write_through(config, path, text, env.cancel()).map_err(|e| e.to_string())? {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(|err| err.to_string())?;
    }
    fs_err::write(path, text).map_err(|err| err.to_string())
}

/// One hunk of a parsed patch as the change it makes: an update's chunks as replacements of
/// their old lines by their new ones, an added file as written whole, a deletion as its text
/// replaced by nothing.
fn file_change((hunk, header, body): (&Hunk, &str, &str)) -> FileChange {
    let path = hunk.path().to_string_lossy().into_owned();
    let (kind, edits) = match hunk {
        Hunk::Add { contents, .. } => {
            (ChangeKind::Add, vec![TextEdit { old: None, new: contents.clone() }])
        }
        Hunk::Delete { .. } => {
            (ChangeKind::Delete, vec![TextEdit { old: Some(String::new()), new: String::new() }])
        }
        Hunk::Update { move_to, chunks, .. } => (
            ChangeKind::Update {
                move_to: move_to.as_ref().map(|to| to.to_string_lossy().into_owned()),
            },
            chunks
                .iter()
                .map(|chunk| TextEdit {
                    old: Some(chunk.old_lines().join("\n")),
                    new: chunk.new_lines().join("\n"),
                })
                .collect(),
        ),
    };
    FileChange { path, kind, diff: body.to_owned(), header: header.to_owned(), edits }
}
