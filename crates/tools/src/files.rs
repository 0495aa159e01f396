//! `FileAccess`: where the file tools (`read_file`, `write_file`, `edit`, `apply_patch`) get and
//! put a text file's content when someone other than the disk has the say — an editor speaking
//! ACP, whose unsaved buffers are what the person sees. The default (no `FileAccess`) is the
//! local filesystem.
//!
//! Invariants: the tools resolve and check a path (writable roots, the symlink guard) exactly as
//! they do for the disk before they hand it here, always absolute; an access answers `None` /
//! `false` for what it has no say in, and the tool then uses the disk as usual; a failure is an
//! error the model sees, never a silent fallback to the disk.

use std::fmt;
use std::path::Path;

use codecoder_kernel::CancelToken;

/// Text content of files from somewhere other than the disk.
pub trait FileAccess: Send + Sync + fmt::Debug {
    /// The text of `path` as the person has it now, or `Ok(None)` when this access does not
    /// read files (the tool reads the disk). Blocks until answered or `cancel` fires.
    ///
    /// # Errors
    /// A message for the model when the other side could not read it.
    fn read_text(&self, path: &Path, cancel: &CancelToken) -> Result<Option<String>, String>;

    /// Writes `content` as the whole text of `path`; `Ok(false)` when this access does not write
    /// files (the tool writes the disk). Blocks until answered or `cancel` fires.
    ///
    /// # Errors
    /// A message for the model when the other side could not write it.
    fn write_text(&self, path: &Path, content: &str, cancel: &CancelToken) -> Result<bool, String>;
}

/// The text of `path` through the config's access, `None` when there is none or it does not
/// read.
pub(crate) fn read_through(
    config: &crate::ToolsConfig,
    path: &Path,
    cancel: &CancelToken,
) -> Result<Option<String>, codecoder_protocol::ToolError> {
    match &config.file_access {
        Some(access) => access.read_text(path, cancel).map_err(crate::failed),
        None => Ok(None),
    }
}

/// Writes through the config's access; false when there is none or it does not write.
pub(crate) fn write_through(
    config: &crate::ToolsConfig,
    path: &Path,
    content: &str,
    cancel: &CancelToken,
) -> Result<bool, codecoder_protocol::ToolError> {
    match &config.file_access {
        Some(access) => access.write_text(path, content, cancel).map_err(crate::failed),
        None => Ok(false),
    }
}
