//! Path resolution: relative paths resolve against the session cwd; a path a tool writes must lie
//! below a writable root once symlinks are resolved, and must not reach a protected path
//! (`codecoder_policy::Guard`) through a symlink.
//!
//! Invariants:
//! - `resolve_writable` returns the real path to write, resolved exactly as the approval chain
//!   resolves the call's `edit:` key (`codecoder_policy::resolve`), so the path approved is the
//!   path written; that path starts with a writable root; otherwise the error names the roots.
//! - A path whose meaning depends on the order of `..` and a symlink (`link/../x`, where the
//!   kernel and the lexical reading disagree) is refused, so a writer that hands the path as
//!   written to the OS (apply_patch) writes the same file that was checked.
//! - A dangling symlink on the way is refused: where it points cannot be checked.
//! - With the guard on, a write whose real path is protected although the path as written is not
//!   (a symlink planted in the workspace leading into `.git`, possibly swapped in after the
//!   approval) is refused: the chain decided about the path as it resolved then, and a protected
//!   write must be asked about under its own name.

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
/// root, or reaches a protected path only through a symlink.
pub(crate) fn resolve_writable(config: &ToolsConfig, raw: &str) -> Result<PathBuf, ToolError> {
    let path = resolve(&config.cwd, raw)?;
    let by_kernel = real_path(&path)?;
    let real = codecoder_policy::resolve(&path, &config.cwd);
    if by_kernel != real {
        return Err(ToolError::PermissionDenied {
            reason: format!(
                "`{}` names `{}` for the OS but `{}` once `..` is applied first (a symlink before \
                 `..`); write the real path",
                path.display(),
                by_kernel.display(),
                real.display()
            ),
        });
    }
    let extra = config.protected_paths.as_deref().unwrap_or_default();
    let guard = codecoder_policy::Guard::new(&config.writable_roots, &config.cwd, extra);
    if !guard.roots().iter().any(|root| real.starts_with(root)) {
        let names: Vec<String> =
            guard.roots().iter().map(|root| root.display().to_string()).collect();
        let shown = if real == path {
            format!("`{}`", path.display())
        } else {
            format!("`{}` (really `{}`)", path.display(), real.display())
        };
        let roots = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
        return Err(ToolError::PermissionDenied {
            reason: format!("{shown} is outside the writable roots: {roots}"),
        });
    }
    if config.protected_paths.is_some()
        && let Some(protection) = guard.check(&real)
        && guard.check(&as_written(config, &path)).is_none()
    {
        return Err(ToolError::PermissionDenied {
            reason: format!(
                "`{}` leads through a symlink to a protected path: {protection}; write the real \
                 path instead (a protected write is asked about)",
                path.display()
            ),
        });
    }
    Ok(real)
}

/// `path` (absolute) with `..` applied and the part below a writable root (or the cwd) as
/// written, not through symlinks: the root, spelled as configured, becomes its resolved form.
fn as_written(config: &ToolsConfig, path: &Path) -> PathBuf {
    let lexical = codecoder_policy::normalize_lexically(path);
    let spellings = config
        .writable_roots
        .iter()
        .map(|root| codecoder_policy::normalize_lexically(&config.cwd.join(root)))
        .chain([codecoder_policy::normalize_lexically(&config.cwd)]);
    let mut best: Option<(PathBuf, PathBuf)> = None;
    for spelling in spellings {
        let Ok(rest) = lexical.strip_prefix(&spelling) else { continue };
        if best
            .as_ref()
            .is_none_or(|(longest, _)| spelling.as_os_str().len() > longest.as_os_str().len())
        {
            let mapped = codecoder_policy::resolve(&spelling, &config.cwd).join(rest);
            best = Some((spelling, mapped));
        }
    }
    best.map_or(lexical, |(_, mapped)| mapped)
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
