//! `codecoder --remote URL`: the interactive UI on a session a running `codecoder serve` hosts.
//! `RemoteHost` is the UI's `Host` over serve's HTTP API: `/new`, `/resume`, `/fork` and
//! `/model` start sessions with `POST /api/sessions`, a resumed or forked session's past is the
//! server's replay of its log (`GET /api/sessions/{id}/history`, the same runtime replay a local
//! resume shows), and the agent is a handle over the session's event stream (`stream.rs`).
//!
//! The token is never taken from the command line: it comes from `$CODECODER_HOME/serve.json`
//! when that file is for the same server, else from an environment variable
//! (`--remote-token-env`, `CODECODER_SERVE_TOKEN` by default). No token is a usage error (exit
//! 2); a server that is not there or refuses the token fails the start with a sentence that
//! says so (exit 1).
//!
//! `/undo` and `/rewind` are the server's routes (it restores the files and its agent logs the
//! record); the turns `/rewind` offers are read from the session's log, which this machine has
//! only when a loopback server shares its home.
//!
//! Invariants: the server's sandbox and approval policy are the session's (the flags that set
//! them locally are refused with `--remote`); paths (`/diff`, `/init`, `@` completion) are
//! this machine's only when the server is on its loopback.

mod client;
mod stream;

#[cfg(test)]
mod tests;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use codecoder_app::history::{HistoryEvent, Replayed};
use codecoder_protocol::{AgentEvent, EventSource, SessionId, UserInput};
use codecoder_tui::{Host, Session, SessionChoice, SessionInfo, SessionSummary, StartRequest};
use serde_json::{Value, json};

use crate::cli::{GlobalArgs, RemoteArgs, TuiOptions};
use crate::exec::usage;
use crate::remote::client::{Client, ServerUrl};
use crate::remote::stream::Followed;

/// Runs the UI on a session of the server at `remote.url`: a new one, or `resume`d (`Some(None)`:
/// the newest of the directory); `pick` opens the session picker at once.
pub(crate) fn run(
    remote: &RemoteArgs,
    global: &GlobalArgs,
    options: &TuiOptions,
    prompt: Option<String>,
    resume: Option<Option<String>>,
    pick: bool,
) -> anyhow::Result<ExitCode> {
    let Some(url) = &remote.url else {
        return Err(usage("--remote needs the server's URL"));
    };
    refuse_local_policy(global)?;
    if options.provider.is_some() {
        return Err(usage(
            "--provider is the server's with --remote: start `codecoder serve --provider ID`",
        ));
    }
    let url = ServerUrl::parse(url).map_err(usage)?;
    let env = |name: &str| std::env::var(name).ok();
    let home = codecoder_stdx::codecoder_home(|name| std::env::var_os(name));
    let (token, source) =
        find_token(&url, home.as_deref(), &remote.token_env, &env).map_err(usage)?;
    let client = Arc::new(Client::new(url.clone(), token, source));
    // The server is there and takes the token, before the UI takes the terminal.
    client.get("/api/server")?;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(usage(
            "the interactive UI needs a terminal on stdin and stdout; for scripts, call the \
             server's HTTP API (`codecoder serve --help`)",
        ));
    }
    let cwd = match &global.cd {
        Some(dir) if url.is_loopback() => Some(fs_err::canonicalize(dir)?),
        // A directory on the server's machine, which the server checks.
        Some(dir) if dir.is_absolute() => Some(dir.clone()),
        Some(dir) => {
            return Err(usage(format!(
                "-C with a server on another machine takes an absolute path there (got `{}`)",
                dir.display()
            )));
        }
        // A loopback server shares this machine's paths: the session opens here, as a local
        // one would. Elsewhere the server's own directory is the default.
        None if url.is_loopback() => Some(std::env::current_dir()?),
        None => None,
    };
    let mut host = RemoteHost {
        client,
        home: home.filter(|_| url.is_loopback()),
        cwd,
        model: options.model.clone(),
        reasoning_effort: None,
        permission_mode: global.safety.permission_mode.map(|mode| mode.as_str().to_owned()),
        running: None,
    };
    let session = match resume {
        Some(id) => SessionChoice::Resume(id.unwrap_or_default()),
        None => SessionChoice::New,
    };
    let session =
        host.start(&StartRequest { session, model: None, provider: None, reasoning_effort: None })?;
    // Before the UI takes the terminal: the first session's notices go to stderr.
    crate::print_notices(&session.notices);
    let config =
        crate::tui_cmd::tui_config(host.mode_label(), options, prompt, host.invocables(), pick);
    codecoder_tui::run(config, session, &mut host)?;
    Ok(ExitCode::SUCCESS)
}

/// The safety flags decide a local session's policy; a hosted one runs under the server's,
/// which a client never changes (`--permission-mode` is asked of the server, which applies it
/// within its own policy, as it does a Shift+Tab).
fn refuse_local_policy(global: &GlobalArgs) -> anyhow::Result<()> {
    let safety = &global.safety;
    let given = [
        (safety.sandbox.is_some(), "--sandbox"),
        (safety.approval.is_some(), "--ask-for-approval"),
        (safety.full_auto, "--full-auto"),
        (safety.yolo, "--dangerously-bypass-approvals-and-sandbox"),
        (!safety.add_dirs.is_empty(), "--add-dir"),
        (!global.overrides.is_empty(), "--config"),
        (global.profile.is_some(), "--profile"),
    ];
    if let Some((_, flag)) = given.iter().find(|(given, _)| *given) {
        return Err(usage(format!(
            "{flag} cannot be used with --remote: a hosted session runs under the server's \
             own settings; give {flag} to `codecoder serve`"
        )));
    }
    Ok(())
}

/// The server's token and where it came from: `serve.json` in `home` when it is for the same
/// server, else the variable `var`. `Err` says what is missing and where a token goes.
pub(crate) fn find_token(
    url: &ServerUrl,
    home: Option<&Path>,
    var: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, String), String> {
    let discovery = home.map(|home| home.join(codecoder_serve::DISCOVERY_FILE));
    let written = discovery.as_ref().and_then(|path| {
        let text = fs_err::read_to_string(path).ok()?;
        let body: Value = serde_json::from_str(&text).ok()?;
        let written_url = body.get("url")?.as_str()?;
        let address = written_url.split_once('?').map_or(written_url, |(address, _)| address);
        let token = body.get("token")?.as_str()?.to_owned();
        Some((ServerUrl::parse(address).ok(), written_url.to_owned(), token))
    });
    let mut other = None;
    if let (Some(path), Some((written, written_url, token))) = (&discovery, written) {
        if written.is_some_and(|written| written.same_server(url)) && !token.is_empty() {
            return Ok((token, format!("the token in {}", path.display())));
        }
        other =
            Some(written_url.split_once('?').map_or(written_url.clone(), |(a, _)| a.to_owned()));
    }
    if let Some(token) = env(var).map(|token| token.trim().to_owned()).filter(|t| !t.is_empty()) {
        return Ok((token, format!("the token in ${var}")));
    }
    let file = match (&discovery, other) {
        (Some(path), Some(other)) => format!("{} is for another server ({other})", path.display()),
        (Some(path), None) => format!(
            "{} does not exist (no `codecoder serve` runs with this CODECODER_HOME)",
            path.display()
        ),
        (None, _) => "no CODECODER_HOME or HOME is set".to_owned(),
    };
    Err(format!(
        "no token for {}: {file}, and ${var} is not set; put the token the server printed (after \
         `?token=`) in ${var}",
        url.base()
    ))
}

/// The UI's `Host` over a `codecoder serve`.
pub(crate) struct RemoteHost {
    client: Arc<Client>,
    /// This machine's codecoder home, for a loopback server (whose session logs may be in it:
    /// `/undo` and `/rewind` read the turns from the log, as a local UI does).
    home: Option<PathBuf>,
    /// Where new sessions open (`None`: the server's own directory).
    cwd: Option<PathBuf>,
    /// The model asked for (`-m`, `/model`), kept for the sessions that follow.
    model: Option<String>,
    /// The reasoning effort chosen with `/model`, kept likewise.
    reasoning_effort: Option<String>,
    /// The permission mode asked for at start, then the last one the server said: new sessions
    /// start in it.
    permission_mode: Option<String>,
    /// The running session's facts as the server gives them.
    running: Option<Running>,
}

/// What the server says about the running session.
struct Running {
    id: String,
    cwd: PathBuf,
    approval: Option<String>,
    sandbox: Option<String>,
    /// Its stream's cursor and its permission mode, kept up to date by the reader.
    followed: Arc<Followed>,
}

impl RemoteHost {
    /// What the status line says about the server's approval and sandbox modes.
    fn mode_label(&self) -> String {
        match self.running.as_ref().map(|r| (&r.approval, &r.sandbox)) {
            Some((Some(approval), Some(sandbox))) => format!("{approval} · {sandbox} (server)"),
            _ => "as the server runs it".to_owned(),
        }
    }

    /// The skills (`$name`) and custom commands (`/name`) the server offers the session.
    fn invocables(&self) -> (Vec<String>, Vec<String>) {
        let Some(running) = &self.running else { return (Vec::new(), Vec::new()) };
        let Ok(answer) = self.client.get(&format!("/api/sessions/{}/commands", running.id)) else {
            return (Vec::new(), Vec::new());
        };
        let listed = answer.get("commands").and_then(Value::as_array).cloned().unwrap_or_default();
        let names = |kind: &str| {
            listed
                .iter()
                .filter(|command| command.get("kind").and_then(Value::as_str) == Some(kind))
                .filter_map(|command| command.get("name").and_then(Value::as_str))
                .map(|name| name.trim_start_matches('/').to_owned())
                .collect::<Vec<_>>()
        };
        (names("skill"), names("prompt"))
    }

    /// A session the server knows, from an id or a unique prefix (empty: the newest of the
    /// directory).
    fn resolve(&self, query: &str) -> anyhow::Result<Listed> {
        let listed = self.list(query.is_empty())?;
        if query.is_empty() {
            return listed
                .into_iter()
                .next()
                .context("no earlier session of this directory on the server");
        }
        let mut matching: Vec<Listed> =
            listed.into_iter().filter(|s| s.id.starts_with(query)).collect();
        match matching.len() {
            1 => Ok(matching.remove(0)),
            0 => anyhow::bail!("the server knows no session {query}"),
            _ => anyhow::bail!("{query} is the start of more than one session id; give more of it"),
        }
    }

    /// The server's sessions, newest first; only this directory's with `here`.
    fn list(&self, here: bool) -> anyhow::Result<Vec<Listed>> {
        let mut path = "/api/sessions".to_owned();
        if here && let Some(cwd) = &self.cwd {
            path.push_str(&format!("?cwd={}", query_escape(&cwd.to_string_lossy())));
        }
        let answer = self.client.get(&path)?;
        let sessions =
            answer.get("sessions").and_then(Value::as_array).cloned().unwrap_or_default();
        Ok(sessions
            .iter()
            .filter_map(|s| {
                Some(Listed {
                    id: s.get("id")?.as_str()?.to_owned(),
                    title: s.get("title").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    updated_ms: s.get("updatedMs").and_then(Value::as_u64).unwrap_or_default(),
                    live: s.get("live").and_then(Value::as_bool).unwrap_or_default(),
                    model: s.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    provider: s
                        .get("provider")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
            })
            .collect())
    }

    /// A resumed or forked session's past, as the server replays its log.
    fn history(&self, id: &str, session_id: SessionId) -> anyhow::Result<Vec<Replayed>> {
        let answer = self.client.get(&format!("/api/sessions/{id}/history"))?;
        let items = answer.get("events").and_then(Value::as_array).cloned().unwrap_or_default();
        Ok(items.into_iter().filter_map(|item| replayed(item, session_id)).collect())
    }
}

/// A session as `GET /api/sessions` lists it.
struct Listed {
    id: String,
    title: String,
    updated_ms: u64,
    /// Hosted by the server now.
    live: bool,
    model: String,
    provider: String,
}

/// One item of a history answer as the runtime's replay gave it: `{seq, event}` or `{seq,
/// user}`; approvals show in their calls' results, so they are left out, as the UI leaves
/// them out of a local replay.
pub(crate) fn replayed(item: Value, session_id: SessionId) -> Option<Replayed> {
    let seq = item.get("seq").and_then(Value::as_u64).unwrap_or_default();
    let root = EventSource { session_id, subagent_path: Vec::new() };
    if let Some(event) = item.get("event") {
        let event: AgentEvent = serde_json::from_value(event.clone()).ok()?;
        return Some(Replayed {
            seq,
            ts: 0,
            source: event.source,
            event: HistoryEvent::Agent(event.kind),
        });
    }
    let user: UserInput = serde_json::from_value(item.get("user")?.clone()).ok()?;
    Some(Replayed { seq, ts: 0, source: root, event: HistoryEvent::User(user) })
}

/// `text` for a URL's query: unreserved characters as they are, every other byte `%XX`.
pub(crate) fn query_escape(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

impl Host for RemoteHost {
    fn start(&mut self, request: &StartRequest) -> anyhow::Result<Session> {
        if request.provider.is_some() {
            anyhow::bail!("the provider is the server's: start `codecoder serve --provider ID`");
        }
        if request.model.is_some() {
            self.model.clone_from(&request.model);
        }
        if request.reasoning_effort.is_some() {
            self.reasoning_effort.clone_from(&request.reasoning_effort);
        }
        let mut body = json!({});
        // A session the server hosts already is joined as it runs, not started again.
        let mut joined = None;
        match &request.session {
            SessionChoice::New => {
                if let Some(cwd) = &self.cwd {
                    body["cwd"] = json!(cwd);
                }
            }
            SessionChoice::Resume(query) => {
                let found = self.resolve(query)?;
                let switching = request.model.is_some() || request.reasoning_effort.is_some();
                if found.live && switching {
                    // A model is chosen when a session starts: the server lets this one go
                    // (its log closed) and resumes it with the model.
                    self.client.post(&format!("/api/sessions/{}/close", found.id), &json!({}))?;
                } else if found.live {
                    joined = Some(found.id.clone());
                }
                if !found.live || switching {
                    body["resume"] = json!(found.id);
                }
            }
            SessionChoice::Fork(query) => body["fork"] = json!(self.resolve(query)?.id),
        }
        if let Some(id) = joined {
            return self.join(&id);
        }
        if let Some(model) = &self.model {
            body["model"] = json!(model);
        }
        if let Some(effort) = &self.reasoning_effort {
            body["effort"] = json!(effort);
        }
        if let Some(mode) = &self.permission_mode {
            body["permissionMode"] = json!(mode);
        }
        let started = self.client.post("/api/sessions", &body)?;
        let id = started
            .get("id")
            .and_then(Value::as_str)
            .context("the server's answer to POST /api/sessions has no `id`")?
            .to_owned();
        let session_id: SessionId =
            id.parse().map_err(|_| anyhow::anyhow!("the server named a session `{id}`"))?;
        let cwd = started.get("cwd").and_then(Value::as_str).map(PathBuf::from).unwrap_or_default();
        let history = match request.session {
            SessionChoice::New => Vec::new(),
            SessionChoice::Resume(_) | SessionChoice::Fork(_) => self.history(&id, session_id)?,
        };
        self.follow(id, session_id, cwd, history, Arc::default(), false)
    }

    fn sessions(&mut self) -> anyhow::Result<Vec<SessionSummary>> {
        Ok(self
            .list(true)?
            .into_iter()
            .filter(|s| !s.title.is_empty())
            .map(|s| SessionSummary {
                id: s.id,
                title: s.title,
                updated: codecoder_stdx::format_utc_ms(s.updated_ms),
            })
            .collect())
    }

    fn cycle_permission_mode(&mut self) -> anyhow::Result<String> {
        let Some(running) = &self.running else { anyhow::bail!("no session is running") };
        let now = running.followed.permission_mode().or_else(|| self.permission_mode.clone());
        let next = match now.as_deref() {
            Some("acceptEdits") => "plan",
            Some("plan") => "default",
            _ => "acceptEdits",
        };
        let answer = self.client.post(
            &format!("/api/sessions/{}/mode", running.id),
            &json!({ "permissionMode": next }),
        )?;
        let mode = answer.get("permissionMode").and_then(Value::as_str).unwrap_or(next).to_owned();
        running.followed.set_permission_mode(Some(mode.clone()));
        // The sessions started next keep it, as a local UI's do.
        self.permission_mode = Some(mode.clone());
        Ok(mode)
    }

    fn permission_mode(&self) -> Option<String> {
        let running = self.running.as_ref().and_then(|running| running.followed.permission_mode());
        running.or_else(|| self.permission_mode.clone())
    }

    fn diff(&mut self, cwd: &Path) -> anyhow::Result<String> {
        self.local(cwd)?;
        Ok(codecoder_app::git_diff(cwd)?)
    }

    fn init_agents_md(&mut self, cwd: &Path) -> anyhow::Result<String> {
        self.local(cwd)?;
        Ok(codecoder_app::init_agents_md(cwd)?)
    }

    fn rewind_points(&mut self, log: &Path) -> anyhow::Result<Vec<codecoder_app::RewindPoint>> {
        Ok(codecoder_app::rewind_points(log)?)
    }

    /// `/undo` and `/rewind N` through the server (`POST /undo`, `/rewind {turns}`), which
    /// restores the files and has its agent log the record before it answers.
    fn rewind(
        &mut self,
        log: &Path,
        request: &codecoder_app::RewindRequest,
    ) -> anyhow::Result<codecoder_app::RewindOutcome> {
        let Some(running) = &self.running else { anyhow::bail!("no session is running") };
        let (route, body) = match request.turn {
            None => ("undo", json!({ "force": request.force })),
            Some(turn) => {
                if !(request.conversation && request.files) {
                    anyhow::bail!(
                        "a remote session goes back in the conversation and the files together: \
                         `/rewind N` or `/rewind N both`"
                    );
                }
                let points = codecoder_app::rewind_points(log)?;
                let Some(at) = points.iter().position(|point| point.turn == turn) else {
                    anyhow::bail!("no prompt of turn {turn} to go back to");
                };
                ("rewind", json!({ "turns": points.len() - at, "force": request.force }))
            }
        };
        let answer = match self.client.post(&format!("/api/sessions/{}/{route}", running.id), &body)
        {
            Ok(answer) => answer,
            Err(err) if err.status == Some(409) && !err.conflicts.is_empty() => {
                return Ok(codecoder_app::RewindOutcome::Conflicts(
                    err.conflicts.iter().map(PathBuf::from).collect(),
                ));
            }
            Err(err) => return Err(err.into()),
        };
        let record: codecoder_protocol::RewindRecord =
            serde_json::from_value(answer).context("the server's answer is not a rewind record")?;
        let report = record.files.then(|| codecoder_app::RewindReport {
            restored: record.restored.iter().map(PathBuf::from).collect(),
            skipped: record.skipped.iter().map(PathBuf::from).collect(),
        });
        Ok(codecoder_app::RewindOutcome::Done { record, report })
    }
}

impl RemoteHost {
    /// Joins session `id`, which the server hosts already: its past is the stream's own
    /// events since the server took it (an approval still pending among them is asked here
    /// too), so nothing shows twice.
    fn join(&mut self, id: &str) -> anyhow::Result<Session> {
        let session_id: SessionId =
            id.parse().map_err(|_| anyhow::anyhow!("the server named a session `{id}`"))?;
        let facts = self.client.get(&format!("/api/sessions/{id}"))?;
        let cwd = facts.get("cwd").and_then(Value::as_str).map(PathBuf::from).unwrap_or_default();
        // The session this UI was just following goes on where it left off: the screen has
        // its past already.
        if let Some(running) = &self.running
            && running.id == id
        {
            let followed = Arc::clone(&running.followed);
            return self.follow(id.to_owned(), session_id, cwd, Vec::new(), followed, false);
        }
        self.follow(id.to_owned(), session_id, cwd, Vec::new(), Arc::default(), true)
    }

    /// Follows hosted session `id` after `cursor`'s `seq`, with `history` (its past as replayed
    /// from the log) shown first; `joined` when it ran before this client came (its stream
    /// from the start is its past).
    fn follow(
        &mut self,
        id: String,
        session_id: SessionId,
        cwd: PathBuf,
        history: Vec<Replayed>,
        followed: Arc<Followed>,
        joined: bool,
    ) -> anyhow::Result<Session> {
        // The session's facts; a server without the route gives what its list says.
        let facts = self.client.get(&format!("/api/sessions/{id}")).ok();
        let fact = |key: &str| {
            facts.as_ref().and_then(|f| f.get(key)).and_then(Value::as_str).map(str::to_owned)
        };
        let (model, provider) = match (fact("model"), fact("provider")) {
            (Some(model), Some(provider)) => (model, provider),
            _ => {
                let listed = self.list(false).unwrap_or_default();
                let entry = listed.into_iter().find(|s| s.id == id);
                (
                    entry.as_ref().map(|s| s.model.clone()).unwrap_or_default(),
                    entry.map(|s| s.provider).unwrap_or_default(),
                )
            }
        };
        let context_window = facts
            .as_ref()
            .and_then(|f| f.get("contextWindow"))
            .and_then(Value::as_u64)
            .unwrap_or_default();
        if let Some(mode) = fact("permissionMode") {
            followed.set_permission_mode(Some(mode.clone()));
            self.permission_mode = Some(mode);
        }
        let agent = stream::attach(
            Arc::clone(&self.client),
            &id,
            Arc::clone(&followed),
            joined,
            self.local_log(&id),
        )?;
        self.running = Some(Running {
            id,
            cwd: cwd.clone(),
            approval: fact("approval"),
            sandbox: fact("sandbox"),
            followed,
        });
        let info = SessionInfo {
            session_id,
            model,
            provider,
            context_window,
            cwd,
            pricing: codecoder_app::Pricing::default(),
        };
        let mut notices = vec![format!(
            "remote session on {} (leaving the UI leaves it running there)",
            self.client.url().base()
        )];
        if joined {
            notices.push(
                "joined a session the server runs already: what happened since it took the \
                 session is shown again"
                    .to_owned(),
            );
        }
        Ok(Session { agent, info, history, notices })
    }

    /// The log of session `id` when it is in this machine's home (a loopback server sharing the
    /// home): read only, for the turns `/rewind` offers; the server writes it.
    fn local_log(&self, id: &str) -> Option<PathBuf> {
        let home = self.home.as_deref()?;
        let listed = codecoder_app::list_sessions(home, None, None, &mut Vec::new()).ok()?;
        listed.sessions.into_iter().find(|s| s.id == id).map(|s| s.path)
    }

    /// `Ok` when the session's directory is on this machine (a loopback server's).
    fn local(&self, cwd: &Path) -> anyhow::Result<()> {
        if self.client.url().is_loopback() && cwd.is_dir() {
            return Ok(());
        }
        anyhow::bail!(
            "the session's directory is on the server's machine ({}), not this one",
            self.running.as_ref().map_or(cwd, |r| r.cwd.as_path()).display()
        )
    }
}
