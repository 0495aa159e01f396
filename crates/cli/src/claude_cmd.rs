//! Claude Code's headless mode (`codecoder -p …`, `--input-format stream-json`): the command
//! line goes to `codecoder_claude`, which prints the protocol on stdout; this file maps its
//! errors to Claude Code's exit codes (2 for usage, 1 otherwise).

use std::io::{self, BufReader, IsTerminal};
use std::process::ExitCode;
use std::sync::Arc;

pub(crate) fn run(args: &[String]) -> ExitCode {
    let parsed = match codecoder_claude::parse(args) {
        Ok(parsed) => parsed,
        Err(err) => {
            eprintln!("codecoder: {err}");
            return ExitCode::from(2);
        }
    };
    let stdin = io::stdin();
    let streams = codecoder_claude::Streams {
        input_is_terminal: stdin.is_terminal(),
        input: Box::new(BufReader::new(stdin)),
        output: Box::new(io::stdout()),
        notice: Arc::new(|text: &str| eprintln!("{text}")),
    };
    match codecoder_claude::run(parsed, streams) {
        Ok(code) => ExitCode::from(code),
        Err(codecoder_claude::Error::Output(err)) if err.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("codecoder: {err}");
            ExitCode::from(if err.is_usage() { 2 } else { 1 })
        }
    }
}
