//! The text the command line prints for the runtime's answers: the session listing, a log's
//! validation, an undo, a compaction, a permission check, the MCP servers, the settings and the plugins.
//!
//! Every renderer writes into a `&mut dyn Write` the caller passes (stdout for the person, a
//! buffer in tests), so the runtime never touches the process's own streams. The text is the
//! command line's contract: its end-to-end tests compare it byte for byte.

use std::collections::BTreeMap;
use std::io::{self, Write};

use codecoder_protocol::{AgentEventKind, RecordBody, Verdict};
use codecoder_stdx::format_utc_ms;
use serde_json::json;

use crate::{
    McpListing, PermissionCheck, Plugin, Runtime, SessionList, Shown, UndoOutcome, ValidLog,
    Validation,
};

/// Writes `sessions list`: a table (or a note that there are none), or with `json` one object
/// per session in a pretty-printed array; on `err`, how many were left out when the limit cut
/// the list.
///
/// # Errors
/// When `out` or `err` fails.
pub fn write_session_list(
    list: &SessionList,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<()> {
    let sessions = &list.sessions;
    if list.total > sessions.len() {
        writeln!(
            err,
            "showing the newest {} of {} sessions (-n N or --all for more)",
            sessions.len(),
            list.total
        )?;
    }
    if json {
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
        return writeln!(out);
    }
    if sessions.is_empty() {
        return writeln!(out, "no sessions in {}", list.dir.display());
    }
    writeln!(
        out,
        "{:<36}  {:<19}  {:>7}  {:<16}  TITLE",
        "ID", "UPDATED (UTC)", "RECORDS", "MODEL"
    )?;
    for s in sessions {
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
    Ok(())
}

impl Validation {
    /// Writes `sessions validate`'s report: `invalid: why`, or a valid log's report
    /// ([`ValidLog::write_report`]). Returns whether the log is valid.
    ///
    /// # Errors
    /// When `out` fails.
    pub fn write_report(&self, out: &mut dyn Write) -> io::Result<bool> {
        match self {
            Self::Invalid(why) => writeln!(out, "invalid: {why}").map(|()| false),
            Self::Valid(log) => log.write_report(out).map(|()| true),
        }
    }
}

impl ValidLog {
    /// Writes `sessions validate`'s report of a valid log: its summary, then a note for each
    /// unknown record, a torn last line, and the records repair would append.
    ///
    /// # Errors
    /// When `out` fails.
    pub fn write_report(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "valid: {} — {} record(s), {} turn(s), last seq {}{}",
            self.path.display(),
            self.record_count,
            self.last_turn,
            self.last_seq,
            if self.ended { ", ended" } else { "" }
        )?;
        for (line, type_name) in &self.unknown {
            writeln!(
                out,
                "note: line {line}: record type `{type_name}` is unknown to this version; kept"
            )?;
        }
        if let Some((line, bytes)) = self.torn_tail {
            writeln!(
                out,
                "note: line {line} is torn ({bytes} bytes, cut by a crash); repair drops it"
            )?;
        }
        if !self.repair_plan.is_empty() {
            writeln!(out, "note: the log stops mid-turn; repair will append:")?;
        }
        for body in &self.repair_plan {
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
        Ok(())
    }
}

impl UndoOutcome {
    /// Writes `sessions undo`'s report: the turns undone and the files restored into `out`,
    /// the files left alone and how to restore them anyway into `err`. Returns whether every
    /// file was restored.
    ///
    /// # Errors
    /// When `out` or `err` fails.
    pub fn write_report(&self, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<bool> {
        let turns: Vec<String> = self.plan.turns.iter().map(ToString::to_string).collect();
        writeln!(out, "undoing turn(s) {} (newest first)", turns.join(", "))?;
        for path in &self.report.restored {
            writeln!(out, "restored {}", path.display())?;
        }
        if self.report.skipped.is_empty() {
            return Ok(true);
        }
        for path in &self.report.skipped {
            writeln!(err, "not restored (changed outside codecoder since): {}", path.display())?;
        }
        writeln!(
            err,
            "run it again with --force to restore these too (their current content is lost)"
        )?;
        Ok(false)
    }
}

impl PermissionCheck {
    /// Writes `permissions check`'s report: the decision, then the tool, its keys and the
    /// modes it was made under. Returns the exit code of the verdict: 0 allow, 1 deny, 3 ask.
    ///
    /// # Errors
    /// When `out` fails.
    pub fn write_report(&self, out: &mut dyn Write) -> io::Result<u8> {
        writeln!(out, "{}", self.decision)?;
        writeln!(out, "  tool: {} ({:?})", self.tool, self.kind)?;
        writeln!(out, "  keys: {}", self.keys.join(", "))?;
        writeln!(
            out,
            "  modes: sandbox {}, approvals {}{}",
            self.modes.sandbox.as_str(),
            self.modes.approval.as_str(),
            if self.modes.bypass { ", bypass" } else { "" }
        )?;
        writeln!(
            out,
            "  (PreToolUse hooks and session grants come first in a session; not run here)"
        )?;
        Ok(match self.decision.verdict {
            Verdict::Allow => 0,
            Verdict::Deny => 1,
            Verdict::Ask => 3,
        })
    }
}

impl McpListing {
    /// Writes `mcp list`: one line per server (config.toml's first, then the others with
    /// where they come from), or with `json` config.toml's tables. Values come masked.
    ///
    /// # Errors
    /// When `out` fails.
    pub fn write_list(&self, json: bool, out: &mut dyn Write) -> io::Result<()> {
        if json {
            return writeln!(out, "{}", serde_json::to_string_pretty(&self.configured)?);
        }
        if self.configured.is_empty() && self.elsewhere.is_empty() {
            return writeln!(
                out,
                "no MCP servers configured (codecoder mcp add NAME -- CMD ARGS…)"
            );
        }
        for (name, server) in &self.configured {
            let headers = if server.http_headers.is_empty() {
                String::new()
            } else {
                let names: Vec<&str> = server.http_headers.keys().map(String::as_str).collect();
                format!(" (headers: {})", names.join(", "))
            };
            let enabled = if server.enabled == Some(false) { " (disabled)" } else { "" };
            writeln!(out, "{name}  {}{headers}{enabled}", crate::describe_mcp_server(server))?;
        }
        for entry in &self.elsewhere {
            writeln!(out, "{}  {}  (from {})", entry.name, entry.how, entry.origin)?;
        }
        Ok(())
    }

    /// Writes `mcp get NAME` (with `json`, as JSON). Returns `false`, having written nothing,
    /// when no server has that name.
    ///
    /// # Errors
    /// When `out` fails.
    pub fn write_server(&self, name: &str, json: bool, out: &mut dyn Write) -> io::Result<bool> {
        let Some(server) = self.configured.get(name) else {
            // A server of `.mcp.json` or `~/.claude.json`: where it comes from and how it is
            // reached (their files hold the rest).
            let Some(entry) = self.elsewhere.iter().find(|entry| entry.name == name) else {
                return Ok(false);
            };
            if json {
                let value = json!({ "name": entry.name, "how": entry.how, "origin": entry.origin });
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
            } else {
                writeln!(out, "{}\n  {}\n  from: {}", entry.name, entry.how, entry.origin)?;
            }
            return Ok(true);
        };
        if json {
            writeln!(out, "{}", serde_json::to_string_pretty(server)?)?;
            return Ok(true);
        }
        writeln!(out, "{name}\n  {}", crate::describe_mcp_server(server))?;
        // The listing's values are masked already: a value may be a secret.
        let pairs = |map: &BTreeMap<String, String>| {
            map.iter().map(|(key, value)| format!("{key}={value}")).collect::<Vec<_>>()
        };
        if !server.env.is_empty() {
            writeln!(out, "  env: {}", pairs(&server.env).join(", "))?;
        }
        if !server.http_headers.is_empty() {
            writeln!(out, "  headers: {}", pairs(&server.http_headers).join(", "))?;
        }
        if let Some(cwd) = &server.cwd {
            writeln!(out, "  cwd: {cwd}")?;
        }
        if let Some(var) = &server.bearer_token_env_var {
            writeln!(out, "  bearer token from: ${var}")?;
        }
        if server.sampling == Some(true) {
            writeln!(out, "  sampling: allowed (it may ask the session's model)")?;
        }
        Ok(true)
    }
}

impl Runtime {
    /// Writes `config show`: the loader's notes and profile as comments, then one `key = value`
    /// line per setting, with `origins` followed by the layer it came from.
    ///
    /// # Errors
    /// When `out` fails.
    pub fn write_settings(&self, origins: bool, out: &mut dyn Write) -> io::Result<()> {
        let loaded = self.loaded();
        for notice in &loaded.notices {
            writeln!(out, "# note: {notice}")?;
        }
        if let Some(profile) = &loaded.profile {
            writeln!(out, "# profile: {profile}")?;
        }
        let settings = self.settings();
        if settings.is_empty() {
            writeln!(out, "# no settings: every value is the built-in default")?;
        }
        for setting in settings {
            let (key, value) = (&setting.key, &setting.value);
            match (origins, &setting.origin) {
                (true, Some(origin)) => writeln!(out, "{key} = {value}  # {origin}")?,
                _ => writeln!(out, "{key} = {value}")?,
            }
        }
        Ok(())
    }
}

/// Shows one thing of `sessions compact`'s turn: the agent's own summary of the compaction
/// into `out`, its warnings and hook messages into `err`; subagents' events and everything
/// else are not shown.
///
/// # Errors
/// When `out` or `err` fails.
pub fn write_compaction(
    shown: Shown<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<()> {
    let Shown::Event(event) = shown else { return Ok(()) };
    if !event.source.subagent_path.is_empty() {
        return Ok(());
    }
    match &event.kind {
        AgentEventKind::Compacted { message, .. } => writeln!(out, "{message}"),
        AgentEventKind::Warning { message } => writeln!(err, "warning: {message}"),
        AgentEventKind::HookMessage { event, message } => writeln!(err, "{event} hook: {message}"),
        _ => Ok(()),
    }
}

/// Writes `plugin list`: one line per recorded plugin and its description below it, or how to
/// add one when there are none.
///
/// # Errors
/// When `out` fails.
pub fn write_plugins(plugins: &[Plugin], out: &mut dyn Write) -> io::Result<()> {
    if plugins.is_empty() {
        writeln!(out, "no plugins (codecoder plugin add DIR)")?;
    }
    for plugin in plugins {
        let state = if plugin.enabled { "enabled" } else { "disabled" };
        let version = plugin.version.as_ref().map(|v| format!(" {v}")).unwrap_or_default();
        writeln!(out, "{}{version}  {}  ({state})", plugin.name, plugin.dir.display())?;
        if let Some(description) = &plugin.description {
            writeln!(out, "  {description}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
