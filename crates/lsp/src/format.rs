//! Formatters run after an edit (`[formatters.NAME] command = ["ruff", "format", "$FILE"],
//! extensions = ["py"]`): off unless configured.
//!
//! Invariants: a formatter runs through the sandbox with the session's confinement and a
//! deadline; its failure is a note, never a failed edit; the note says whether the file changed.

use std::path::Path;
use std::time::Duration;

use codecoder_sandbox::{CommandSpec, Wait};

use crate::{LspConfig, shown_path};

/// How long a formatter may run.
const FORMAT_TIMEOUT: Duration = Duration::from_secs(10);

/// Output of a failing formatter kept for the note.
const KEPT_OUTPUT: usize = 2000;

/// One formatter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatterConfig {
    /// Its name (the table's key).
    pub name: String,
    /// The program and its arguments; `$FILE` in any of them is replaced by the file's path.
    pub command: Vec<String>,
    /// File extensions it formats, without the dot.
    pub extensions: Vec<String>,
}

/// Runs the formatters configured for `path`'s extension, in order; the note says what each
/// did. `None` when none is configured for it.
pub(crate) fn run_formatters(config: &LspConfig, path: &Path) -> Option<String> {
    let extension = path.extension().and_then(|ext| ext.to_str())?;
    let shown = shown_path(&config.cwd, path);
    let mut notes = Vec::new();
    for formatter in config
        .formatters
        .iter()
        .filter(|formatter| formatter.extensions.iter().any(|served| served == extension))
    {
        let Some((program, args)) = formatter.command.split_first() else { continue };
        let file = path.to_string_lossy();
        let args: Vec<String> = args.iter().map(|arg| arg.replace("$FILE", &file)).collect();
        let before = fs_err::read(path).ok();
        let mut spec = CommandSpec::new(program.replace("$FILE", &file), args);
        spec.cwd = Some(config.cwd.clone());
        let collected = codecoder_sandbox::output(
            &spec,
            &config.spawn,
            &Wait::within(FORMAT_TIMEOUT),
            KEPT_OUTPUT,
        );
        let name = &formatter.name;
        let note = match collected {
            Err(err) => format!("Formatter {name} did not run on {shown}: {err}."),
            Ok(collected) if collected.success() => {
                if fs_err::read(path).ok() == before {
                    format!("Formatter {name} ran on {shown}: no change.")
                } else {
                    format!(
                        "Formatter {name} ran on {shown}: the file changed (read it again before editing it)."
                    )
                }
            }
            Ok(collected) => {
                let mut output = String::from_utf8_lossy(&collected.stderr).trim().to_owned();
                if output.is_empty() {
                    output = String::from_utf8_lossy(&collected.stdout).trim().to_owned();
                }
                let outcome = match collected.outcome {
                    codecoder_sandbox::Outcome::Exited(status) => status.to_string(),
                    codecoder_sandbox::Outcome::TimedOut => {
                        format!("no end within {} s", FORMAT_TIMEOUT.as_secs())
                    }
                    codecoder_sandbox::Outcome::Cancelled | codecoder_sandbox::Outcome::Killed => {
                        "stopped".to_owned()
                    }
                };
                format!("Formatter {name} failed on {shown} ({outcome}): {output}")
            }
        };
        notes.push(note);
    }
    if notes.is_empty() { None } else { Some(notes.join("\n")) }
}
