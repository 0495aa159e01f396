//! `RuntimeHost`: the UI's `Host` over the runtime (`codecoder-app`). `/new`, `/resume`,
//! `/fork`, `/model` and `/provider` start sessions the way every front-end does; a resumed or
//! forked session's past is the runtime's replay of its log (`codecoder_app::history`), its
//! calls described by the session's own tools.

use std::path::Path;

use anyhow::Context;
use codecoder_app::history::{self, Detail, ReplayConfig, Rewound};
use codecoder_app::{ApprovalMode, Modes, Runtime, SessionControls, SessionRequest, Start};

use crate::{Host, Session, SessionChoice, SessionInfo, SessionSummary, StartRequest};

/// Starts the UI's sessions with one runtime's settings.
pub struct RuntimeHost {
    runtime: Runtime,
    model: Option<String>,
    provider: Option<String>,
    /// The reasoning effort chosen with `/model`, kept for the sessions that follow.
    reasoning_effort: Option<String>,
    /// The modes the sessions run under (known once the first session started).
    modes: Option<Modes>,
    /// The running session's approval mode, for `/approvals MODE`.
    controls: Option<SessionControls>,
}

/// What the status line says about the modes.
fn mode_label(modes: Modes) -> String {
    if modes.bypass {
        "yolo (no sandbox, no approvals)".to_owned()
    } else {
        format!("{} · {}", modes.approval.as_str(), modes.sandbox.as_str())
    }
}

impl RuntimeHost {
    /// A host over `runtime`.
    pub fn new(runtime: Runtime) -> Self {
        Self {
            runtime,
            model: None,
            provider: None,
            reasoning_effort: None,
            modes: None,
            controls: None,
        }
    }

    /// The label of the modes the running session has (empty before the first start).
    pub fn mode_label(&self) -> String {
        self.modes.map(mode_label).unwrap_or_default()
    }

    /// Starts a session: `start` new, resumed or forked; `model`/`provider` replace the ones
    /// in use from now on.
    ///
    /// # Errors
    /// When the session cannot be found or its agent cannot start.
    pub fn start_session(
        &mut self,
        start: Start,
        model: Option<String>,
        provider: Option<String>,
    ) -> anyhow::Result<Session> {
        if model.is_some() {
            self.model = model;
        }
        if provider.is_some() {
            self.provider = provider;
        }
        let replays_log = !matches!(start, Start::New);
        let session = self.runtime.start(&SessionRequest {
            start,
            model: self.model.clone(),
            provider: self.provider.clone(),
            reasoning_effort: self.reasoning_effort.clone(),
            interactive: true,
            ..SessionRequest::new()
        })?;
        // A mode switched with /approvals carries over to the next session of this run.
        if let Some(modes) = self.modes
            && modes.approval != session.modes.approval
        {
            session.controls.set_approval(modes.approval);
        }
        // So does a permission mode switched with Shift+Tab.
        if let Some(controls) = &self.controls {
            session.controls.set_permission_mode(controls.permission_mode());
        }
        self.modes = Some(session.controls.modes());
        self.controls = Some(session.controls.clone());
        let history = match (replays_log, session.agent.session_path()) {
            (true, Some(path)) => {
                let loaded =
                    history::load(path).with_context(|| format!("reading {}", path.display()))?;
                let config = ReplayConfig {
                    viewer: session.tools.as_ref(),
                    detail: Detail::Conversation,
                    rewound: Rewound::Skip,
                };
                history::events(&loaded, &config)
            }
            _ => Vec::new(),
        };
        let info = SessionInfo {
            session_id: session.agent.session_id(),
            model: session.model,
            provider: session.provider_id,
            context_window: session.context_window,
            cwd: session.cwd,
            pricing: session.pricing,
        };
        let notices = session.notices.iter().map(ToString::to_string).collect();
        Ok(Session { agent: session.agent, info, history, notices })
    }
}

impl Host for RuntimeHost {
    fn set_approval_mode(&mut self, mode: &str) -> anyhow::Result<String> {
        let approval: ApprovalMode = mode.parse().map_err(|err| anyhow::anyhow!("{err}"))?;
        let Some(controls) = &self.controls else {
            anyhow::bail!("no session is running");
        };
        controls.set_approval(approval);
        let modes = controls.modes();
        self.modes = Some(modes);
        if modes.bypass {
            anyhow::bail!(
                "--dangerously-bypass-approvals-and-sandbox is on, so nothing is asked whatever the mode; restart without it"
            );
        }
        Ok(mode_label(modes))
    }

    fn start(&mut self, request: &StartRequest) -> anyhow::Result<Session> {
        let start = match &request.session {
            SessionChoice::New => Start::New,
            SessionChoice::Resume(id) => Start::Resume(Some(id.clone())),
            SessionChoice::Fork(id) => Start::Fork(id.clone()),
        };
        if request.reasoning_effort.is_some() {
            self.reasoning_effort.clone_from(&request.reasoning_effort);
        }
        self.start_session(start, request.model.clone(), request.provider.clone())
    }

    fn sessions(&mut self) -> anyhow::Result<Vec<SessionSummary>> {
        Ok(self
            .runtime
            .resumable_sessions()?
            .into_iter()
            .map(|s| SessionSummary {
                id: s.id,
                title: s.title,
                updated: codecoder_stdx::format_utc_ms(s.updated_ms),
            })
            .collect())
    }

    fn cycle_permission_mode(&mut self) -> anyhow::Result<String> {
        let Some(controls) = &self.controls else {
            anyhow::bail!("no session is running");
        };
        Ok(controls.cycle_permission_mode().to_string())
    }

    fn permission_mode(&self) -> Option<String> {
        self.controls.as_ref().map(|controls| controls.permission_mode().to_string())
    }

    fn diff(&mut self, cwd: &Path) -> anyhow::Result<String> {
        Ok(codecoder_app::git_diff(cwd)?)
    }

    fn hooks(&mut self, approve: bool) -> anyhow::Result<String> {
        let review = codecoder_app::review_hooks(&self.runtime)?;
        if !approve {
            return Ok(review.describe());
        }
        let approved = review.approve_pending(self.runtime.home())?;
        let review = codecoder_app::review_hooks(&self.runtime)?;
        Ok(format!(
            "approved {} project hook(s); they run from the next session (/new)\n{}",
            approved.len(),
            review.describe()
        ))
    }

    fn init_agents_md(&mut self, cwd: &Path) -> anyhow::Result<String> {
        Ok(codecoder_app::init_agents_md(cwd)?)
    }

    fn rewind_points(&mut self, log: &Path) -> anyhow::Result<Vec<codecoder_app::RewindPoint>> {
        Ok(codecoder_app::rewind_points(log)?)
    }

    fn rewind(
        &mut self,
        log: &Path,
        request: &codecoder_app::RewindRequest,
    ) -> anyhow::Result<codecoder_app::RewindOutcome> {
        Ok(codecoder_app::rewind(self.runtime.home(), log, request)?)
    }
}
