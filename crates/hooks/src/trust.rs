//! The hooks a person approved, per project: a project's hooks (its `.claude/settings*.json`
//! and `.codecoder/hooks.json`) run only once their digest is listed here.
//!
//! The store is `$CODECODER_HOME/trusted-hooks.json`:
//! `{"projects": {"/abs/root": ["<digest>", …]}}`. A digest covers a hook's event, matcher and
//! handler (see [`crate::HookEntry::digest`]), so a hook whose command, matcher or any setting
//! changes is a different hook and needs approving again; the file it sits in does not count,
//! so moving a hook between the project's files keeps it approved.
//!
//! Invariant: project roots are stored canonicalized, and a write replaces the file whole
//! (written beside it, then renamed), so a reader never sees half of it.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::{Error, Result};

/// The store's file name in the codecoder home.
pub const TRUSTED_HOOKS_FILE: &str = "trusted-hooks.json";

fn root_key(root: &Path) -> String {
    fs_err::canonicalize(root).unwrap_or_else(|_| root.to_owned()).to_string_lossy().into_owned()
}

fn read(file: &Path) -> Result<Map<String, Value>> {
    let text = match fs_err::read_to_string(file) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(err) => return Err(Error::Io(err)),
    };
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Error::Shape {
            path: file.to_owned(),
            at: "(top level)".to_owned(),
            message: "expected an object `{\"projects\": {…}}`".to_owned(),
        }),
        Err(err) => Err(Error::Json {
            path: file.to_owned(),
            line: err.line(),
            column: err.column(),
            message: err.to_string(),
        }),
    }
}

/// The digests approved for the project in `root`. A missing or unreadable store approves
/// nothing (the hooks then wait for a review, which says what is wrong with the file).
pub fn approved_hooks(home: &Path, root: &Path) -> BTreeSet<String> {
    let Ok(store) = read(&home.join(TRUSTED_HOOKS_FILE)) else { return BTreeSet::new() };
    store
        .get("projects")
        .and_then(|projects| projects.get(root_key(root)))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Adds `digests` to the approved hooks of the project in `root`; returns the store's path.
///
/// # Errors
/// A store that is not valid JSON (nothing is written then: its approvals would be lost), or
/// one that cannot be read or written.
pub fn approve_hooks(home: &Path, root: &Path, digests: &[String]) -> Result<PathBuf> {
    let file = home.join(TRUSTED_HOOKS_FILE);
    let mut store = read(&file)?;
    let projects = store.entry("projects".to_owned()).or_insert_with(|| Value::Object(Map::new()));
    if !projects.is_object() {
        *projects = Value::Object(Map::new());
    }
    if let Value::Object(projects) = projects {
        let entry = projects.entry(root_key(root)).or_insert_with(|| Value::Array(Vec::new()));
        let mut set: BTreeSet<String> = entry
            .as_array()
            .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        set.extend(digests.iter().cloned());
        *entry = Value::Array(set.into_iter().map(Value::String).collect());
    }
    fs_err::create_dir_all(home)?;
    let staged = home.join(format!(".{TRUSTED_HOOKS_FILE}.{}", std::process::id()));
    let text = serde_json::to_string_pretty(&Value::Object(store)).map_err(io::Error::other)?;
    fs_err::write(&staged, text + "\n")?;
    fs_err::rename(&staged, &file)?;
    Ok(file)
}
