//! The crate's error (a skill that cannot be activated) and the warnings discovery collects.

use std::path::PathBuf;

/// Why a skill cannot be activated.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No skill has this name.
    #[error("no skill named `{name}`")]
    UnknownSkill {
        /// The name asked for.
        name: String,
    },
    /// The skill's file went bad since the catalogue was made.
    #[error("{0}")]
    Invalid(Warning),
}

/// A file skipped or a definition shadowed: what and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The file.
    pub path: PathBuf,
    /// The 1-based line, when one is at fault.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}
