//! Path resolution (issue 5, point 9): relative paths resolve against the session cwd; a path a
//! tool writes must lie below a writable root once symlinks are resolved.
//!
//! Invariants:
//! - `resolve_writable` returns the real path to write (every existing component resolved, the
//!   rest normalized), and that path starts with a real writable root; otherwise the error names
//!   the roots.
//! - A dangling symlink on the way is refused: where it points cannot be checked.

use std::path::{Component, Path, PathBuf};

use codecoder_protocol::ToolError;

use crate::{ToolsConfig, invalid};

/// `raw` resolved against `cwd` (lexically; nothing is read).
pub(crate) fn resolve(cwd: &Path, raw: &str) -> Result<PathBuf, ToolError> {
    if raw.is_empty() {
        return Err(invalid("`path` is empty"));
    }
    if raw.contains('\0') {
        return Err(invalid("`path` contains a NUL byte"));
    }
    let path = Path::new(raw);
    Ok(if path.is_absolute() { path.to_path_buf() } else { cwd.join(path) })
}

/// `raw` resolved against the cwd and through symlinks; `Err` when it is outside every writable
/// root.
pub(crate) fn resolve_writable(config: &ToolsConfig, raw: &str) -> Result<PathBuf, ToolError> {
    let path = resolve(&config.cwd, raw)?;
    let real = real_path(&path)?;
    let roots: Vec<PathBuf> = config
        .writable_roots
        .iter()
        .map(|root| {
            let root = if root.is_absolute() { root.clone() } else { config.cwd.join(root) };
            real_path(&root).unwrap_or(root)
        })
        .collect();
    if roots.iter().any(|root| real.starts_with(root)) {
        return Ok(real);
    }
    let names: Vec<String> = roots.iter().map(|root| root.display().to_string()).collect();
    let shown = if real == path {
        format!("`{}`", path.display())
    } else {
        format!("`{}` (really `{}`)", path.display(), real.display())
    };
    let roots = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
    Err(ToolError::PermissionDenied {
        reason: format!("{shown} is outside the writable roots: {roots}"),
    })
}

/// The real path of `path` (absolute): the longest existing prefix canonicalized, the rest
/// appended with `.` and `..` applied lexically (safe: those components do not exist, so none
/// is a symlink).
pub(crate) fn real_path(path: &Path) -> Result<PathBuf, ToolError> {
    let components: Vec<Component<'_>> = path.components().collect();
    for split in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        let Ok(mut real) = fs_err::canonicalize(&prefix) else {
            if fs_err::symlink_metadata(&prefix).is_ok_and(|meta| meta.file_type().is_symlink()) {
                return Err(ToolError::Failed {
                    message: format!(
                        "`{}` is a symlink whose target does not exist",
                        prefix.display()
                    ),
                });
            }
            continue;
        };
        for component in &components[split..] {
            match component {
                Component::CurDir => {}
                Component::ParentDir => {
                    real.pop();
                }
                Component::Normal(name) => real.push(name),
                Component::RootDir | Component::Prefix(_) => real.push(component.as_os_str()),
            }
        }
        return Ok(real);
    }
    Ok(path.to_path_buf())
}

/// `path` as the model should see it: relative to the cwd when below it.
pub(crate) fn display(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests;
