//! Project trust: a project's own `.codecoder/config.toml` is read only after the person said
//! they trust that project (`codecoder trust [DIR]`), because it could point codecoder at
//! another provider or change what runs without asking.
//!
//! Trusted roots are listed in `$CODECODER_HOME/trusted-projects.toml` as
//! `[projects."/abs/path"] trusted = true`. Invariant: paths are stored canonicalized.

use std::path::{Path, PathBuf};

use toml::{Table, Value};

use crate::HomeFile;
use crate::error::Result;

const TRUST_FILE: &str = "trusted-projects.toml";

/// The project root of `cwd`: the nearest ancestor holding `.git`, else `cwd` itself.
pub fn project_root(cwd: &Path) -> PathBuf {
    let cwd = fs_err::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    cwd.ancestors().find(|dir| dir.join(".git").exists()).map_or(cwd.clone(), Path::to_owned)
}

fn read(home: &Path) -> Table {
    fs_err::read_to_string(home.join(TRUST_FILE))
        .ok()
        .and_then(|text| toml::from_str(&text).ok())
        .unwrap_or_default()
}

/// Whether `root` was trusted.
pub fn is_trusted(home: &Path, root: &Path) -> bool {
    let root = fs_err::canonicalize(root).unwrap_or_else(|_| root.to_owned());
    read(home)
        .get("projects")
        .and_then(Value::as_table)
        .and_then(|projects| projects.get(&*root.to_string_lossy()))
        .and_then(|entry| entry.get("trusted"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Records `root` as trusted; returns the canonical path recorded.
///
/// # Errors
/// When the file of trusted projects is not valid TOML (nothing is written then: the projects
/// it lists would be lost), or cannot be read or written.
pub fn trust(home: &Path, root: &Path) -> Result<PathBuf> {
    let root = fs_err::canonicalize(root)?;
    let file = HomeFile::lock(&home.join(TRUST_FILE))?;
    let text = file.read()?;
    let mut table: Table =
        toml::from_str(&text).map_err(|err| crate::Error::toml(file.path(), &text, &err))?;
    let projects = table.entry("projects").or_insert_with(|| Value::Table(Table::new()));
    if let Value::Table(projects) = projects {
        let mut entry = Table::new();
        entry.insert("trusted".to_owned(), Value::Boolean(true));
        projects.insert(root.to_string_lossy().into_owned(), Value::Table(entry));
    }
    file.write(&toml::to_string(&table).map_err(std::io::Error::other)?)?;
    Ok(root)
}
