//! Claude Code's headless mode (`codecoder -p …`, `--input-format stream-json`): the command
//! line goes to `codecoder_claude`, which prints the protocol on stdout; this file maps its
//! errors to Claude Code's exit codes (2 for usage, 1 otherwise) and turns the signals the
//! Agent SDKs send to end a run (SIGTERM, also SIGHUP and SIGINT) into a clean stop: the turn
//! is cancelled and its processes killed; a second signal kills them and exits at once.

use std::io::{self, BufReader, IsTerminal};
use std::process::ExitCode;
use std::sync::Arc;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

pub(crate) fn run(args: &[String]) -> ExitCode {
    let parsed = match codecoder_claude::parse(args) {
        Ok(parsed) => parsed,
        Err(err) => {
            eprintln!("codecoder: {err}");
            return ExitCode::from(2);
        }
    };
    let (stop_tx, stop) = crossbeam_channel::unbounded();
    let signals = match signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT]) {
        Ok(signals) => signals,
        Err(err) => {
            eprintln!("codecoder: installing the signal handlers: {err}");
            return ExitCode::FAILURE;
        }
    };
    let handle = signals.handle();
    let mut signals = signals;
    // Detached: it waits for signals for as long as the process lives.
    let watcher = std::thread::Builder::new().name("claude-signals".to_owned()).spawn(move || {
        let mut seen = 0;
        for signal in signals.forever() {
            seen += 1;
            if seen == 1 {
                let _ = stop_tx.send(signal);
            } else {
                codecoder_app::kill_all();
                std::process::exit(128 + signal);
            }
        }
    });
    if let Err(err) = watcher {
        eprintln!("codecoder: starting the signal thread: {err}");
        return ExitCode::FAILURE;
    }
    let stdin = io::stdin();
    let streams = codecoder_claude::Streams {
        input_is_terminal: stdin.is_terminal(),
        input: Box::new(BufReader::new(stdin)),
        output: Box::new(io::stdout()),
        notice: Arc::new(|text: &str| eprintln!("{text}")),
        stop,
    };
    let outcome = codecoder_claude::run(parsed, streams);
    handle.close();
    match outcome {
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
