//! `codecoder sessions …`: list, show (a transcript, the records as JSON, or one request's exact
//! body), validate, fork, compact, undo, rm, reindex. The runtime reads and writes the logs and
//! their index (`codecoder_app::list_sessions`, `SessionLog`, …) and writes the reports into the
//! writer this file passes; this file maps the arguments, prints notices and picks exit codes.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{CompactArgs, GlobalArgs, ListArgs, SessionsCommand, UndoArgs};
use crate::print_notices;

pub(crate) fn run(
    command: SessionsCommand,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let home = codecoder_app::home()?;
    // The index's warnings go to stderr even when the command then fails.
    let mut warnings = Vec::new();
    match command {
        SessionsCommand::List(args) => list(&home, &args, out),
        SessionsCommand::Show(args) => {
            let log = codecoder_app::SessionLog::open(&home, &args.session)?;
            if let Some(number) = args.request {
                let runtime = codecoder_app::Runtime::load(global.overrides())?;
                out.write_all(&runtime.request_body(log.loaded(), number)?)?;
            } else if args.json {
                serde_json::to_writer_pretty(&mut *out, &log.to_json()?)?;
                writeln!(out)?;
            } else {
                log.write_transcript(out)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Validate(args) => {
            let valid = codecoder_app::validate_session(&home, &args.session)?.write_report(out)?;
            Ok(if valid { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        SessionsCommand::Fork(args) => {
            let forked = codecoder_app::fork_session(&home, &args.session, args.at, &mut warnings);
            print_notices(&warnings);
            let forked = forked?;
            writeln!(out, "{}", forked.id)?;
            let path = forked.path.map(|p| p.display().to_string()).unwrap_or_default();
            eprintln!("forked into {path}");
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Compact(args) => compact(&args, global, out),
        SessionsCommand::Undo(args) => undo(&args, global, out),
        SessionsCommand::Rm(args) => {
            let removed = codecoder_app::remove_session(&home, &args.session, &mut warnings);
            print_notices(&warnings);
            writeln!(out, "removed {}", removed?.display())?;
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Reindex => {
            let indexed = codecoder_app::reindex_sessions(&home, &mut warnings);
            print_notices(&warnings);
            writeln!(out, "indexed {} session(s)", indexed?)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Restores the files of the session's last turn (or of `--turn N` on) and prints what it did.
fn undo(args: &UndoArgs, global: &GlobalArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let runtime = crate::load_runtime(global, None, None)?;
    let turn = args.turn.map(codecoder_protocol::TurnId::new);
    let outcome = runtime.undo_session(&args.session, turn, args.force)?;
    let restored_all = outcome.write_report(out, &mut std::io::stderr())?;
    Ok(if restored_all { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Resumes the session, has its agent compact it, and prints what happened.
fn compact(
    args: &CompactArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let runtime = crate::load_runtime(global, None, None)?;
    let session = runtime.start_compaction(&args.session, args.focus.clone())?;
    print_notices(&session.notices);
    let mut err = std::io::stderr();
    let end = codecoder_app::follow_headless_turn(session.agent, &mut |shown| {
        codecoder_app::write_compaction(shown, out, &mut err)
    })?;
    Ok(crate::exec::turn_code(end.outcome.as_ref(), "compaction"))
}

fn list(home: &std::path::Path, args: &ListArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let cwd = args.cwd.as_deref().map(codecoder_app::sessions_dir).transpose()?;
    let limit = (!args.all).then_some(args.limit);
    let mut warnings = Vec::new();
    let listed = codecoder_app::list_sessions(home, cwd.as_deref(), limit, &mut warnings);
    print_notices(&warnings);
    codecoder_app::write_session_list(&listed?, args.json, out, &mut std::io::stderr())?;
    Ok(ExitCode::SUCCESS)
}
