//! The config crate's one error type. Every variant says where the problem is.

use std::path::{Path, PathBuf};

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

impl Error {
    /// A TOML error in the file `path` holding `text`, as `Invalid` or `UnknownKey` with its
    /// line and column.
    pub(crate) fn toml(path: &Path, text: &str, err: &toml::de::Error) -> Self {
        let offset = err.span().map_or(0, |span| span.start);
        let (line, column) = line_column(text, offset);
        let message = err.message().trim().to_owned();
        if let Some((key, expected)) = unknown_field(&message) {
            return Error::UnknownKey {
                path: path.to_owned(),
                line,
                suggestion: closest(&key, &expected),
                key,
            };
        }
        Error::Invalid { path: path.to_owned(), line, column, message }
    }
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Parses serde's "unknown field `x`, expected one of `a`, `b`" message.
pub(crate) fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (key, rest) = rest.split_once('`')?;
    let expected = rest.split('`').skip(1).step_by(2).map(str::to_owned).collect();
    Some((key.to_owned(), expected))
}

/// The valid key closest to `key`, when one is close enough to be a typo.
pub(crate) fn closest(key: &str, expected: &[String]) -> Option<String> {
    expected
        .iter()
        .map(|candidate| (strsim::damerau_levenshtein(key, candidate), candidate))
        .filter(|(distance, candidate)| *distance <= (candidate.len().max(key.len()) / 3).max(2))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate.clone())
}
