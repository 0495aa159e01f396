//! The policy crate's one error type: a permission rule that does not parse. Every message
//! names the offending text and says how to write it instead.

use std::fmt;

use codecoder_protocol::Verdict;

use crate::rules::RuleOrigin;

/// A policy problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A permission rule does not parse.
    #[error("{origin} {list} rule `{rule}`: {problem}")]
    Rule {
        /// The rule as written.
        rule: String,
        /// The list it is in (`allow`, `ask` or `deny`: the verdict it gives).
        list: Verdict,
        /// Where it came from.
        origin: RuleOrigin,
        /// What is wrong with it.
        problem: RuleProblem,
    },
}

/// The error `RuleSet::parse` returns (the crate's one error type).
pub type RuleError = Error;

/// The policy crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// What is wrong with a permission rule; the message says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleProblem {
    /// Nothing but whitespace.
    Empty,
    /// `Tool(pattern` without the closing parenthesis, or text after it.
    Parentheses,
    /// The tool name has characters a tool name cannot have.
    ToolName {
        /// The name as written.
        name: String,
    },
    /// `Tool()`.
    EmptyPattern,
    /// A pattern on a tool that takes none.
    PatternNotSupported {
        /// The tool.
        tool: String,
    },
    /// A path pattern globset rejects.
    Glob {
        /// The pattern.
        pattern: String,
        /// globset's message.
        message: String,
    },
    /// `~user/…` in a path pattern.
    OtherUsersHome,
    /// A `web_fetch` pattern that is not `domain:HOST` or `domain:*.HOST`.
    Domain {
        /// The pattern.
        pattern: String,
    },
}

impl fmt::Display for RuleProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => {
                f.write_str("the rule is empty; write a tool name such as `run_command` or a tool with a pattern such as `edit(src/**)`")
            }
            Self::Parentheses => f.write_str(
                "unbalanced parentheses; write `Tool` or `Tool(pattern)` with the `)` last",
            ),
            Self::ToolName { name } => write!(
                f,
                "`{name}` is not a tool name; use letters, digits, `_` and `-` (for example `run_command`, `Bash`, `mcp__server__tool`)"
            ),
            Self::EmptyPattern => f.write_str(
                "the pattern inside `()` is empty; drop the parentheses to match every call of the tool",
            ),
            Self::PatternNotSupported { tool } => write!(
                f,
                "`{tool}` takes no pattern (only shell, edit, read and web_fetch rules do); write `{tool}` alone"
            ),
            Self::Glob { pattern, message } => {
                write!(f, "`{pattern}` is not a valid glob: {message}")
            }
            Self::OtherUsersHome => {
                f.write_str("`~user` paths are not supported; write `~/…` or an absolute `//path`")
            }
            Self::Domain { pattern } => write!(
                f,
                "`{pattern}` is not a web_fetch pattern; write `domain:HOST` (exact host) or `domain:*.HOST` (its subdomains)"
            ),
        }
    }
}
