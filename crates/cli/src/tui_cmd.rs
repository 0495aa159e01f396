//! `codecoder` (no subcommand) and `codecoder resume`: the interactive UI on the agent stack.
//!
//! This module wires `codecoder-tui` to `stack::build`: it checks for a terminal (a pipe gets a
//! usage error pointing at `exec`, exit 2), starts the first session, re-reads a resumed
//! session's log for its transcript, and implements `codecoder_tui::Host` so `/new`, `/resume`,
//! `/fork`, `/model` and `/provider` start agents the same way.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use codecoder_session::{Index, SessionStore, WriterConfig};
use codecoder_tui::{
    Host, Pricing, Session, SessionChoice, SessionInfo, SessionSummary, StartRequest, TuiConfig,
};

use crate::cli::{GlobalArgs, TuiOptions};
use crate::exec::usage;
use crate::stack::{StackRequest, build};

/// The NO_COLOR convention (no-color.org): set and non-empty turns colours off. Spelled here
/// because `protocol::env` is outside this change; it belongs there.
const NO_COLOR: &str = "NO_COLOR";

/// Runs the UI. `resume`: `None` a new session, `Some(None)` the newest of this directory,
/// `Some(Some(id))` that session.
/// `pick`: open the session picker at once (`codecoder resume` without an id).
pub(crate) fn run(
    global: &GlobalArgs,
    options: &TuiOptions,
    prompt: Option<String>,
    resume: Option<Option<String>>,
    pick: bool,
) -> anyhow::Result<ExitCode> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(usage(
            "the interactive UI needs a terminal on stdin and stdout; for pipes and scripts use `codecoder exec \"PROMPT\"`",
        ));
    }
    let mut host = CliHost {
        home: None,
        global: global.clone(),
        model: options.model.clone(),
        provider: options.provider.clone(),
        modes: None,
        safety: None,
    };
    let session = host.start_stack(resume, None, None)?;
    let approval_mode = host.modes.map(mode_label).unwrap_or_default();
    let config = TuiConfig {
        approval_mode,
        no_color: std::env::var_os(NO_COLOR).is_some_and(|v| !v.is_empty()),
        initial_prompt: prompt,
        skills: Vec::new(),
        stats_path: options.stats_file.clone(),
        open_resume_picker: pick,
    };
    codecoder_tui::run(config, session, &mut host)?;
    Ok(ExitCode::SUCCESS)
}

/// Starts agents for the UI with the command line's settings.
struct CliHost {
    global: GlobalArgs,
    /// `$CODECODER_HOME`, known once the first stack is built.
    home: Option<PathBuf>,
    model: Option<String>,
    provider: Option<String>,
    /// The modes the sessions run under (known once the first stack is built).
    modes: Option<codecoder_policy::Modes>,
    /// The running session's approval chain and escalation setting, for `/approvals MODE`.
    safety: Option<(Arc<crate::safety::ChainPolicy>, codecoder_tools::EscalationSetting)>,
}

/// What the status line says about the modes.
fn mode_label(modes: codecoder_policy::Modes) -> String {
    if modes.bypass {
        "yolo (no sandbox, no approvals)".to_owned()
    } else {
        format!("{} · {}", modes.approval.as_str(), modes.sandbox.as_str())
    }
}

impl CliHost {
    fn home(&self) -> anyhow::Result<PathBuf> {
        match &self.home {
            Some(home) => Ok(home.clone()),
            None => crate::config_cmd::home(),
        }
    }

    fn start_stack(
        &mut self,
        resume: Option<Option<String>>,
        model: Option<String>,
        provider: Option<String>,
    ) -> anyhow::Result<Session> {
        if model.is_some() {
            self.model = model;
        }
        if provider.is_some() {
            self.provider = provider;
        }
        let resuming = resume.is_some();
        let stack = build(
            &self.global,
            &StackRequest {
                model: self.model.clone(),
                provider: self.provider.clone(),
                replay: None,
                ephemeral: false,
                output_schema: None,
                resume,
                interactive: true,
            },
        )?;
        // A mode switched with /approvals carries over to the next session of this run.
        if let Some(modes) = self.modes
            && modes.approval != stack.modes.approval
        {
            stack.policy.set_approval(modes.approval, &stack.escalation);
        }
        self.modes = Some(stack.policy.modes());
        self.safety = Some((Arc::clone(&stack.policy), stack.escalation.clone()));
        let (transcript, (usage_so_far, context_tokens)) =
            match (resuming, stack.agent.session_path()) {
                (true, Some(path)) => {
                    let loaded = codecoder_session::load(path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    (
                        codecoder_tui::transcript_from_records(loaded.records()),
                        codecoder_tui::usage_from_records(loaded.records()),
                    )
                }
                _ => (Vec::new(), Default::default()),
            };
        // Prices: `[models."ID"]` of config.toml first, then the catalog.
        let catalog = codecoder_providers::model_info(&stack.model);
        let configured = stack.config.models.get(&stack.model);
        let pricing = Pricing {
            input: configured.and_then(|m| m.input_price).or(catalog.input_price),
            cached_input: configured
                .and_then(|m| m.cached_input_price)
                .or(catalog.cached_input_price),
            output: configured.and_then(|m| m.output_price).or(catalog.output_price),
        };
        self.home = Some(stack.home);
        let info = SessionInfo {
            session_id: stack.agent.session_id(),
            model: stack.model,
            provider: stack.provider_id,
            context_window: stack.context_window,
            cwd: stack.cwd,
            pricing,
            usage_so_far,
            context_tokens,
        };
        Ok(Session { agent: stack.agent, info, transcript })
    }
}

impl Host for CliHost {
    fn set_approval_mode(&mut self, mode: &str) -> anyhow::Result<String> {
        let approval: codecoder_policy::ApprovalMode =
            mode.parse().map_err(|err| anyhow::anyhow!("{err}"))?;
        let Some((policy, escalation)) = &self.safety else {
            anyhow::bail!("no session is running");
        };
        policy.set_approval(approval, escalation);
        let modes = policy.modes();
        self.modes = Some(modes);
        if modes.bypass {
            anyhow::bail!(
                "--dangerously-bypass-approvals-and-sandbox is on, so nothing is asked whatever the mode; restart without it"
            );
        }
        Ok(mode_label(modes))
    }

    fn start(&mut self, request: &StartRequest) -> anyhow::Result<Session> {
        let resume = match &request.session {
            SessionChoice::New => None,
            SessionChoice::Resume(id) => Some(Some(id.clone())),
            SessionChoice::Fork(id) => {
                let store = SessionStore::new(&self.home()?);
                let writer = store.fork(id, None, WriterConfig::standard())?;
                let path: Option<PathBuf> = writer.path().map(ToOwned::to_owned);
                let forked = writer.session_id().to_string();
                drop(writer);
                Some(Some(path.map_or(forked, |p| p.to_string_lossy().into_owned())))
            }
        };
        self.start_stack(resume, request.model.clone(), request.provider.clone())
    }

    fn sessions(&mut self) -> anyhow::Result<Vec<SessionSummary>> {
        let store = SessionStore::new(&self.home()?);
        let mut index = Index::open(&store)?;
        index.refresh(&store)?;
        let cwd = crate::config_cmd::cwd(&self.global)?;
        let sessions = index.list(Some(&cwd.to_string_lossy()))?;
        // A session nobody typed into (this one, just started) is nothing to resume.
        Ok(sessions
            .into_iter()
            .filter(|s| s.problem.is_none() && !s.title.is_empty())
            .map(|s| SessionSummary {
                id: s.id.to_string(),
                title: s.title,
                updated: codecoder_stdx::format_utc_ms(s.updated_ms),
            })
            .collect())
    }
}
