//! `codecoder sessions …`: list, show (a transcript, the records as JSON, or one request's exact
//! body), validate, fork, rm, reindex.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use codecoder_protocol::RecordBody;
use codecoder_session::{Entry, Error, Index, SessionStore, WriterConfig, load};
use codecoder_stdx::format_utc_ms;
use serde_json::json;

use crate::cli::{
    CompactArgs, ForkArgs, GlobalArgs, ListArgs, SessionsCommand, ShowArgs, UndoArgs, ValidateArgs,
};

pub(crate) fn run(
    command: SessionsCommand,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let store = SessionStore::new(crate::config_cmd::home()?);
    match command {
        SessionsCommand::List(args) => list(&store, &args, out),
        SessionsCommand::Show(args) => show(&store, &args, global, out),
        SessionsCommand::Validate(args) => validate(&store, &args, out),
        SessionsCommand::Fork(args) => fork(&store, &args, out),
        SessionsCommand::Compact(args) => compact(&args, global, out),
        SessionsCommand::Undo(args) => undo(&args, global, out),
        SessionsCommand::Rm(args) => {
            let path = store.remove(&args.session)?;
            refreshed_index(&store)?;
            writeln!(out, "removed {}", path.display())?;
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Reindex => {
            let mut index = Index::open(&store)?;
            let stats = index.rebuild(&store)?;
            print_warnings(&index);
            writeln!(out, "indexed {} session(s)", stats.files)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Restores the files of the session's last turn (or of `--turn N` on) and prints what it did.
fn undo(args: &UndoArgs, global: &GlobalArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let runtime = crate::load_runtime(global, None, None)?;
    let turn = args.turn.map(codecoder_protocol::TurnId::new);
    let outcome = runtime.undo_session(&args.session, turn, args.force)?;
    let turns: Vec<String> = outcome.plan.turns.iter().map(ToString::to_string).collect();
    writeln!(out, "undoing turn(s) {} (newest first)", turns.join(", "))?;
    for path in &outcome.report.restored {
        writeln!(out, "restored {}", path.display())?;
    }
    if outcome.report.skipped.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for path in &outcome.report.skipped {
        eprintln!("not restored (changed outside codecoder since): {}", path.display());
    }
    eprintln!("run it again with --force to restore these too (their current content is lost)");
    Ok(ExitCode::FAILURE)
}

/// Resumes the session, has its agent compact it, and prints what happened.
fn compact(
    args: &CompactArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    use codecoder_protocol::{AgentCommand, AgentEventKind, TurnOutcome};
    let runtime = crate::load_runtime(global, None, None)?;
    let session = runtime.start(&codecoder_app::SessionRequest {
        start: codecoder_app::Start::Resume(Some(args.session.clone())),
        ..codecoder_app::SessionRequest::new()
    })?;
    for notice in &session.notices {
        eprintln!("{notice}");
    }
    let agent = session.agent;
    agent
        .cmd
        .send(AgentCommand::Compact { focus: args.focus.clone() })
        .context("the agent stopped")?;
    let mut outcome = None;
    for event in agent.events.iter() {
        if !event.source.subagent_path.is_empty() {
            continue;
        }
        match event.kind {
            AgentEventKind::Compacted { message, .. } => writeln!(out, "{message}")?,
            AgentEventKind::Warning { message } => eprintln!("warning: {message}"),
            AgentEventKind::HookMessage { event, message } => eprintln!("{event} hook: {message}"),
            AgentEventKind::TurnDone { outcome: done, .. } => {
                outcome = Some(done);
                break;
            }
            _ => {}
        }
    }
    let _ = agent.cmd.send(AgentCommand::Shutdown);
    for event in agent.events.iter() {
        if matches!(event.kind, AgentEventKind::ShutdownComplete) {
            break;
        }
    }
    let _ = agent.join();
    match outcome {
        Some(TurnOutcome::Completed) => Ok(ExitCode::SUCCESS),
        Some(TurnOutcome::Failed { message }) => {
            eprintln!("codecoder: the compaction failed: {message}");
            Ok(ExitCode::FAILURE)
        }
        Some(_) => Ok(ExitCode::from(130)),
        None => {
            eprintln!("codecoder: the agent stopped before the compaction ended");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The store's index, up to date with the logs. What went wrong with the index file (it is then
/// rebuilt, or kept in memory) is printed as a warning; only the logs' directory failing fails.
pub(crate) fn refreshed_index(store: &SessionStore) -> anyhow::Result<Index> {
    let mut index = Index::open(store)?;
    let refreshed = index.refresh(store);
    print_warnings(&index);
    refreshed?;
    Ok(index)
}

fn print_warnings(index: &Index) {
    for warning in index.warnings() {
        eprintln!("warning: {warning}");
    }
}

fn list(store: &SessionStore, args: &ListArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let index = refreshed_index(store)?;
    let cwd = match &args.cwd {
        Some(dir) => Some(
            fs_err::canonicalize(dir)
                .with_context(|| format!("--cwd {}", dir.display()))?
                .to_string_lossy()
                .into_owned(),
        ),
        None => None,
    };
    let limit = (!args.all).then_some(args.limit);
    let sessions = index.list_newest(cwd.as_deref(), limit)?;
    if limit.is_some_and(|limit| sessions.len() >= limit) {
        let total = index.count(cwd.as_deref())?;
        if total > sessions.len() {
            eprintln!(
                "showing the newest {} of {total} sessions (-n N or --all for more)",
                sessions.len()
            );
        }
    }
    if args.json {
        let rows: Vec<_> = sessions
            .iter()
            .map(|s| {
                json!({
                    "id": s.id,
                    "path": s.path,
                    "cwd": s.cwd,
                    "title": s.title,
                    "model": s.model,
                    "provider": s.provider,
                    "createdAt": s.created_ms / 1000,
                    "updatedAt": s.updated_ms / 1000,
                    "parent": s.parent,
                    "recordCount": s.record_count,
                    "problem": s.problem,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut *out, &rows)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        writeln!(out, "no sessions in {}", store.sessions_dir().display())?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<36}  {:<19}  {:>7}  {:<16}  TITLE",
        "ID", "UPDATED (UTC)", "RECORDS", "MODEL"
    )?;
    for s in &sessions {
        let title = match &s.problem {
            Some(problem) => format!("[unreadable: {problem}]"),
            None if s.title.is_empty() => "(no input yet)".to_owned(),
            None => s.title.clone(),
        };
        writeln!(
            out,
            "{:<36}  {:<19}  {:>7}  {:<16}  {title}",
            s.id,
            format_utc_ms(s.updated_ms),
            s.record_count,
            s.model
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn show(
    store: &SessionStore,
    args: &ShowArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let path = store.find(&args.session)?;
    let loaded = load(&path)?;
    if let Some(number) = args.request {
        let runtime = codecoder_app::Runtime::load(global.overrides())?;
        out.write_all(&runtime.request_body(&loaded, number)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.json {
        let records: Vec<serde_json::Value> = loaded
            .entries
            .iter()
            .map(|entry| match entry {
                Entry::Record(record) => serde_json::to_value(record),
                Entry::Unknown(unknown) => Ok(unknown.raw.clone()),
            })
            .collect::<Result<_, _>>()?;
        let doc = json!({
            "path": loaded.path,
            "sessionId": loaded.meta.session_id,
            "records": records,
            "tornTail": loaded.torn_tail.map(|t| json!({"line": t.line, "bytes": t.len})),
            "needsRepair": loaded.trace.needs_repair(),
        });
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    codecoder_app::write_transcript(&store.blobs(), &loaded, out)?;
    Ok(ExitCode::SUCCESS)
}

fn validate(
    store: &SessionStore,
    args: &ValidateArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let path = store.find(&args.session)?;
    let loaded = match load(&path) {
        Ok(loaded) => loaded,
        Err(err @ (Error::Corrupt { .. } | Error::Invalid { .. } | Error::Empty { .. })) => {
            writeln!(out, "invalid: {err}")?;
            return Ok(ExitCode::FAILURE);
        }
        Err(err) => return Err(err.into()),
    };
    let trace = &loaded.trace;
    let record_count = loaded.entries.len();
    writeln!(
        out,
        "valid: {} — {record_count} record(s), {} turn(s), last seq {}{}",
        path.display(),
        trace.last_turn(),
        trace.last_seq(),
        if trace.is_ended() { ", ended" } else { "" }
    )?;
    for unknown in loaded.unknown() {
        writeln!(
            out,
            "note: line {}: record type `{}` is unknown to this version; kept",
            unknown.line, unknown.type_name
        )?;
    }
    if let Some(torn) = loaded.torn_tail {
        writeln!(
            out,
            "note: line {} is torn ({} bytes, cut by a crash); repair drops it",
            torn.line, torn.len
        )?;
    }
    let plan = loaded.repair_plan();
    if !plan.is_empty() {
        writeln!(out, "note: the log stops mid-turn; repair will append:")?;
        for body in &plan {
            let detail = match body {
                RecordBody::ToolResult { result, synthetic } => format!(
                    " for `{}` ({})",
                    result.tool_call_id,
                    synthetic.map(|s| format!("{s:?}")).unwrap_or_default()
                ),
                RecordBody::StepEnd { step, .. } => format!(" (step {step})"),
                RecordBody::TurnEnd { turn, .. } => format!(" (turn {turn}, interrupted)"),
                _ => String::new(),
            };
            writeln!(out, "  - {}{detail}", body.type_name())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn fork(store: &SessionStore, args: &ForkArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let writer = store.fork(&args.session, args.at, WriterConfig::standard())?;
    let path = writer.path().map(|p| p.display().to_string()).unwrap_or_default();
    writeln!(out, "{}", writer.session_id())?;
    drop(writer);
    refreshed_index(store)?;
    eprintln!("forked into {path}");
    Ok(ExitCode::SUCCESS)
}
