//! The config crate's one error type. Every variant says where the problem is.

use std::path::PathBuf;

/// A configuration problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file is not valid TOML, or a value has the wrong type.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A key no version of the config knows.
    #[error("{}:{line}: unknown key `{key}`{}", path.display(), suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The key.
        key: String,
        /// The closest valid key.
        suggestion: Option<String>,
    },
    /// A `-c key=value` argument is malformed or invalid.
    #[error("-c {argument}: {message}")]
    Override {
        /// The argument as given.
        argument: String,
        /// What is wrong.
        message: String,
    },
    /// `-p NAME` (or `profile = "NAME"`) names a profile no layer defines.
    #[error("no profile named `{name}`{}", if defined.is_empty() { " (none is defined)".to_owned() } else { format!(" (defined: {})", defined.join(", ")) })]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// The profiles that exist.
        defined: Vec<String>,
    },
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The config crate's result.
pub type Result<T> = std::result::Result<T, Error>;
