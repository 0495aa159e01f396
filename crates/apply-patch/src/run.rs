//! The standalone `apply-patch` command: `apply-patch 'PATCH'`, or the patch on stdin.
//!
//! Invariants: output goes only to the given writers (never to the process's stdout/stderr);
//! the exit code is 0 on success, 1 when the patch is invalid or fails to apply, and 2 on a
//! usage error (more than one argument, or no argument and an empty stdin).

#[cfg(test)]
mod tests;

use std::io::{Read, Write};
use std::path::Path;

use crate::{apply, parse};

const USAGE: &str =
    "usage: apply-patch [PATCH]\n(the patch is read from stdin when PATCH is absent)";

/// Runs the command with `args` (the arguments after the program or subcommand name), applying
/// the patch relative to `cwd`. On success the report goes to `out`; errors go to `err`.
/// Returns the exit code. Failures to write to `out` or `err` are ignored.
pub fn run(
    args: &[String],
    mut stdin: impl Read,
    cwd: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let stdin_text;
    let patch_text = match args {
        [patch_text] => patch_text.as_str(),
        [] => {
            let mut text = String::new();
            if let Err(error) = stdin.read_to_string(&mut text) {
                let _ = writeln!(err, "cannot read the patch from stdin: {error}");
                return 1;
            }
            if text.trim().is_empty() {
                let _ = writeln!(err, "no patch given: stdin is empty\n{USAGE}");
                return 2;
            }
            stdin_text = text;
            stdin_text.as_str()
        }
        [_, _, ..] => {
            let _ = writeln!(
                err,
                "expected the patch as exactly one argument, got {} arguments\n{USAGE}",
                args.len()
            );
            return 2;
        }
    };
    let patch = match parse(patch_text) {
        Ok(patch) => patch,
        Err(error) => {
            let _ = writeln!(err, "{error}");
            return 1;
        }
    };
    match apply(&patch, cwd) {
        Ok(report) => {
            let _ = write!(out, "{report}");
            0
        }
        Err(error) => {
            let _ = writeln!(err, "{error}");
            1
        }
    }
}
