//! The decision chain: one `Decision` per tool call, with the level that made it and a
//! one-line explanation.
//!
//! Order: (1) the PreToolUse hook verdict → (2) a session grant → (3) project rules → (4) user
//! rules → (5) the default for the tool's kind under the current modes. The first level with
//! an opinion decides, with two exceptions:
//! - a deny at any level wins (hook deny, project deny, user deny, and the default deny of
//!   reads and edits under a hidden path);
//! - an `ask` rule (project or user) beats a hook `allow`: a hook can skip the prompt, not an
//!   ask rule (as in Claude Code).
//!
//! A hook that rewrites the input does so before the chain runs: the caller recomputes the
//! permission keys from the new input and passes the hook's verdict here.
//!
//! Invariants: `decide` is pure (no I/O beyond canonicalizing existing paths) and total;
//! every decision names its source; bypass (`--yolo`) turns default asks and mode denies into
//! allows but never overrides a hook deny, a rule deny, or a hidden path (only a user allow
//! rule lifts a hidden path: project config, which comes with the repository, cannot).

use std::fmt;
use std::path::{Path, PathBuf};

use codecoder_kernel::HookVerdict;
use codecoder_protocol::{CallKind, CallView, DecidedBy, ToolKind, Verdict};

use crate::command::{CommandContext, Severity};
use crate::mode::{ApprovalMode, Modes, PermissionMode, SandboxMode};
use crate::paths::{Placement, Roots, resolve};
use crate::protect::Protection;
use crate::rules::{Call, RuleSet, Subject};

/// The session-wide inputs of the chain.
#[derive(Debug, Clone)]
pub struct Policy {
    /// `--sandbox`, `--ask-for-approval`, `--yolo`.
    pub modes: Modes,
    /// Whether a sandbox backend is actually confining commands. Under on-request, a command
    /// that is not known read-only is only run without asking when something contains it.
    pub sandbox_active: bool,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// Where edits and commands may write (workspace-write: cwd, /tmp, `$TMPDIR`,
    /// `--add-dir`); their `.git`, `.codecoder` and `.agents` stay read-only. Empty means the
    /// cwd alone.
    pub writable_roots: Vec<PathBuf>,
    /// Credential stores: reads and edits under them are denied unless a user rule allows
    /// them (the product passes `codecoder_sandbox::default_hidden_paths`, so the sandbox and
    /// the read tools hide the same list).
    pub hidden_paths: Vec<PathBuf>,
    /// The home directory (`~` in rules and commands).
    pub home: Option<PathBuf>,
    /// Paths protected wherever they are, besides those inside the roots
    /// ([`crate::protect::Guard`]): codecoder's home.
    pub protected_paths: Vec<PathBuf>,
    /// The project's rules (`RuleOrigin::Project`).
    pub project_rules: RuleSet,
    /// The user's rules (`RuleOrigin::User`).
    pub user_rules: RuleSet,
}

impl Policy {
    /// The context commands are classified in.
    pub fn command_context(&self) -> CommandContext {
        CommandContext {
            cwd: self.cwd.clone(),
            writable_roots: self.writable_roots.clone(),
            home: self.home.clone(),
        }
    }
}

/// One call to decide.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The tool's kind.
    pub kind: ToolKind,
    /// What the call is, as its tool describes it: whether it is an MCP server's tool, marked
    /// destructive, and which rules' subject its kind belongs to.
    pub view: &'a CallView,
    /// The keys the tool derived from the arguments (`shell:<command>`, `edit:<path>`,
    /// `read:<path>`, `web_fetch:<host>`, or the bare tool name).
    pub permission_keys: &'a [String],
    /// The PreToolUse hooks' verdict, if any hook gave one.
    pub hook: Option<&'a HookVerdict>,
    /// True when a "for this session" answer covers every key.
    pub session_grant: bool,
}

/// Which level decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The PreToolUse hook.
    Hook,
    /// A "for this session" answer.
    SessionGrant,
    /// A rule of the project's config.
    ProjectRule {
        /// The rule as written.
        rule: String,
        /// Its list (the verdict it gives).
        list: Verdict,
    },
    /// A rule of the user's config.
    UserRule {
        /// The rule as written.
        rule: String,
        /// Its list (the verdict it gives).
        list: Verdict,
    },
    /// A read or edit under a hidden path (credentials).
    HiddenPath {
        /// The path the call touches.
        path: PathBuf,
        /// The hidden path it is under.
        hidden: PathBuf,
    },
    /// An edit of a protected path ([`crate::protect::Guard`]): `.git`, `.codecoder`,
    /// `.agents`, `.claude/settings*.json`, `.mcp.json`, git hooks, codecoder's home.
    Protected {
        /// The path the call writes.
        path: PathBuf,
        /// The protected file or tree it is in.
        protected: PathBuf,
    },
    /// The permission mode: plan mode refuses what is not read-only; acceptEdits allows an
    /// edit inside the writable roots that the default would ask about.
    PermissionMode {
        /// The mode.
        mode: PermissionMode,
    },
    /// The default for the tool's kind under the modes.
    Default {
        /// The tool's kind.
        kind: ToolKind,
        /// The modes it was decided under.
        modes: Modes,
    },
}

impl Source {
    /// Who decided, in the approval record's words: a hook, a session grant, a rule (hidden and
    /// protected paths count as rules), or the mode's default.
    pub fn decided_by(&self) -> DecidedBy {
        match self {
            Self::Hook => DecidedBy::Hook,
            Self::SessionGrant => DecidedBy::SessionGrant,
            Self::ProjectRule { .. }
            | Self::UserRule { .. }
            | Self::HiddenPath { .. }
            | Self::Protected { .. } => DecidedBy::Rule,
            Self::Default { .. } | Self::PermissionMode { .. } => DecidedBy::Mode,
        }
    }
}

/// The chain's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Allow, ask or deny.
    pub verdict: Verdict,
    /// The level that decided.
    pub source: Source,
    /// One line: the source and why (`` project rule deny `run_command(git push*)` ``,
    /// `` default: `git reset --hard` discards uncommitted work (on-request) ``).
    pub reason: String,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} — {}", self.verdict, self.reason)
    }
}

fn rule_decision(origin_is_project: bool, list: Verdict, rule: &str, note: &str) -> Decision {
    let verdict = list;
    let (source, who) = if origin_is_project {
        (Source::ProjectRule { rule: rule.to_owned(), list }, "project")
    } else {
        (Source::UserRule { rule: rule.to_owned(), list }, "user")
    };
    Decision { verdict, source, reason: format!("{who} rule {list} `{rule}`{note}") }
}

/// Decides one call.
pub fn decide(policy: &Policy, request: &Request<'_>) -> Decision {
    let ctx = policy.command_context();
    let call = Call::new(request.tool, &request.view.kind, request.permission_keys, &ctx);
    let hook_reason = request.hook.and_then(|hook| hook.reason.as_deref());
    let hook_text = match hook_reason {
        Some(reason) => format!("PreToolUse hook: {reason}"),
        None => "PreToolUse hook".to_owned(),
    };

    // A deny at any level wins.
    if request.hook.is_some_and(|hook| hook.decision == Verdict::Deny) {
        return Decision { verdict: Verdict::Deny, source: Source::Hook, reason: hook_text };
    }
    let project = policy.project_rules.evaluate(&call, &ctx);
    let user = policy.user_rules.evaluate(&call, &ctx);
    if let Some((Verdict::Deny, rule)) = project {
        return rule_decision(true, Verdict::Deny, rule.text(), "");
    }
    if let Some((Verdict::Deny, rule)) = user {
        return rule_decision(false, Verdict::Deny, rule.text(), "");
    }
    if let Some(decision) = hidden_path_denial(policy, &call, &ctx) {
        return decision;
    }
    let protected = protected_write(policy, &call, &ctx);

    // The hook; an ask rule beats its allow.
    match request.hook.map(|hook| hook.decision) {
        Some(Verdict::Allow) => {
            // A hook may come with the repository: its allow does not lift a protection.
            if let Some(decision) = protected {
                return decision;
            }
            for (is_project, found) in [(true, project), (false, user)] {
                if let Some((Verdict::Ask, rule)) = found {
                    return rule_decision(
                        is_project,
                        Verdict::Ask,
                        rule.text(),
                        " (an ask rule beats the hook's allow)",
                    );
                }
            }
            return Decision { verdict: Verdict::Allow, source: Source::Hook, reason: hook_text };
        }
        Some(Verdict::Ask) => {
            return Decision { verdict: Verdict::Ask, source: Source::Hook, reason: hook_text };
        }
        Some(Verdict::Deny) | None => {}
    }

    if request.session_grant {
        return Decision {
            verdict: Verdict::Allow,
            source: Source::SessionGrant,
            reason: "allowed for this session".to_owned(),
        };
    }
    // Only the person's own `edit(PATTERN)` allow rule lifts a protection (the project's comes
    // with the repository whose files are protected; a bare `edit` rule is not about them).
    if let Some(decision) = protected {
        return match user {
            Some((Verdict::Allow, rule)) if rule.names_edit_paths() => rule_decision(
                false,
                Verdict::Allow,
                rule.text(),
                &format!(" (lifts: {})", decision.reason),
            ),
            _ => decision,
        };
    }
    if let Some((list, rule)) = project {
        return rule_decision(true, list, rule.text(), "");
    }
    if let Some((list, rule)) = user {
        return rule_decision(false, list, rule.text(), "");
    }
    default_decision(policy, request, &call, &ctx)
}

/// Plan mode's refusal of a call that is not read-only: a write, an edit, a patch, a command
/// not known read-only, a tool of another kind (an MCP tool without `readOnlyHint`). `None` for
/// read-only tools (a subagent's included: its own calls come through this chain), fetches
/// (network, but they change nothing), questions to the person and known read-only commands,
/// which go through the chain as usual.
pub fn plan_refusal(policy: &Policy, request: &Request<'_>) -> Option<Decision> {
    let tool = request.tool;
    let why = match request.kind {
        ToolKind::ReadOnly | ToolKind::Interactive => return None,
        ToolKind::Network if request.view.kind == CallKind::Fetch => return None,
        ToolKind::Exec => {
            let ctx = policy.command_context();
            let call = Call::new(tool, &request.view.kind, request.permission_keys, &ctx);
            let mut commands = Vec::new();
            let mut read_only = true;
            for subject in call.subjects() {
                match subject {
                    Subject::Shell { command, classification } => {
                        commands.push(format!("`{}`", shorten(command)));
                        read_only &= classification.severity == Severity::Safe;
                    }
                    _ => read_only = false,
                }
            }
            if read_only && !commands.is_empty() {
                return None;
            }
            if commands.is_empty() {
                format!("`{tool}` runs a command")
            } else {
                format!("{} is not known to be read-only", commands.join(", "))
            }
        }
        ToolKind::Edit => format!("`{tool}` changes files"),
        ToolKind::Network | ToolKind::Other => {
            format!("`{tool}` is not known to be read-only")
        }
    };
    Some(Decision {
        verdict: Verdict::Deny,
        source: Source::PermissionMode { mode: PermissionMode::Plan },
        reason: format!(
            "plan mode: {why}. You are in plan mode: only read-only tools run. Explore, then \
             present your plan with `exit_plan_mode`; once the user approves it you can make \
             changes"
        ),
    })
}

/// True when every file `request` edits is inside the writable roots and not protected (what
/// acceptEdits lets through without asking).
pub fn edits_inside_roots(policy: &Policy, request: &Request<'_>) -> bool {
    if request.kind != ToolKind::Edit {
        return false;
    }
    let ctx = policy.command_context();
    let call = Call::new(request.tool, &request.view.kind, request.permission_keys, &ctx);
    let roots = edit_roots(policy, &ctx);
    let subjects = call.subjects();
    !subjects.is_empty()
        && subjects.iter().all(|subject| match subject {
            Subject::Edit(path) => matches!(roots.place(path), Placement::Writable),
            _ => false,
        })
}

fn hidden_path_denial(policy: &Policy, call: &Call, ctx: &CommandContext) -> Option<Decision> {
    let hidden: Vec<PathBuf> =
        policy.hidden_paths.iter().map(|path| resolve(path, &ctx.cwd)).collect();
    for subject in call.subjects() {
        let (Subject::Read(path) | Subject::Edit(path)) = subject else { continue };
        // A process's environment (`/proc/self/environ`, `/proc/PID/environ`, a task's) holds
        // the agent's own secrets, which commands never get: it is hidden like a credential
        // store.
        let environ = is_process_environment(path).then(|| path.clone());
        let Some(under) =
            environ.as_ref().or_else(|| hidden.iter().find(|hidden| path.starts_with(hidden)))
        else {
            continue;
        };
        let single = call.single(subject.clone());
        if policy.user_rules.allowing(&single, ctx).is_some() {
            continue;
        }
        return Some(Decision {
            verdict: Verdict::Deny,
            source: Source::HiddenPath { path: path.clone(), hidden: under.clone() },
            reason: format!(
                "default: `{}` is under the hidden path `{}` (credentials); a user allow rule can lift this",
                path.display(),
                under.display()
            ),
        });
    }
    None
}

/// `/proc/…/environ`: the environment of a process (or of one of its threads).
fn is_process_environment(path: &Path) -> bool {
    let mut components = path.components();
    matches!(components.next(), Some(std::path::Component::RootDir))
        && components.next().is_some_and(|c| c.as_os_str() == "proc")
        && path.file_name().is_some_and(|name| name == "environ")
}

/// The decision for a call that edits a protected path: ask, or deny under `never`. `None` when
/// no edit of the call is protected, under bypass, and under danger-full-access (no roots).
fn protected_write(policy: &Policy, call: &Call, ctx: &CommandContext) -> Option<Decision> {
    if policy.modes.bypass || policy.modes.sandbox == SandboxMode::DangerFullAccess {
        return None;
    }
    let roots = edit_roots(policy, ctx);
    let protection: Protection = call.subjects().iter().find_map(|subject| match subject {
        Subject::Edit(path) => match roots.place(path) {
            Placement::Protected(protection) => Some(*protection),
            Placement::Writable | Placement::Outside => None,
        },
        _ => None,
    })?;
    let approval = policy.modes.approval;
    let verdict = cell(approval, Verdict::Ask, Verdict::Ask, Verdict::Deny);
    let reason = if verdict == Verdict::Deny {
        format!("{protection}; a protected write needs approval, and the approval mode is never")
    } else {
        format!("{protection}; a protected write is always asked ({approval})")
    };
    Some(Decision {
        verdict,
        source: Source::Protected {
            path: protection.path.clone(),
            protected: protection.protected,
        },
        reason,
    })
}

fn edit_roots(policy: &Policy, ctx: &CommandContext) -> Roots {
    if ctx.writable_roots.is_empty() {
        Roots::new(std::slice::from_ref(&ctx.cwd), &ctx.cwd, &policy.protected_paths)
    } else {
        Roots::new(&ctx.writable_roots, &ctx.cwd, &policy.protected_paths)
    }
}

/// A default cell: the verdict per approval mode.
fn cell(
    approval: ApprovalMode,
    untrusted: Verdict,
    on_request: Verdict,
    never: Verdict,
) -> Verdict {
    match approval {
        ApprovalMode::Untrusted => untrusted,
        ApprovalMode::OnRequest => on_request,
        ApprovalMode::Never => never,
    }
}

fn default_decision(
    policy: &Policy,
    request: &Request<'_>,
    call: &Call,
    ctx: &CommandContext,
) -> Decision {
    use Verdict::{Allow, Ask, Deny};
    let modes = policy.modes;
    let approval = modes.approval;
    let tool = request.tool;
    let view = request.view;
    let (verdict, why) = match request.kind {
        ToolKind::ReadOnly => (Allow, format!("`{tool}` only reads")),
        ToolKind::Interactive => (Allow, format!("`{tool}` talks to the person")),
        ToolKind::Network if view.is_mcp() => (
            cell(approval, Ask, Ask, Allow),
            format!("`{tool}` is an MCP server's tool and runs outside the sandbox"),
        ),
        ToolKind::Network => {
            (cell(approval, Ask, Ask, Allow), format!("`{tool}` reaches the network"))
        }
        // Never without a person: what it does is unknown, or its server says it destroys.
        ToolKind::Other if view.is_mcp() && view.destructive => (
            cell(approval, Ask, Ask, Deny),
            format!("`{tool}` is marked destructive by its MCP server"),
        ),
        ToolKind::Other => {
            (cell(approval, Ask, Ask, Deny), format!("`{tool}` is not a known kind of tool"))
        }
        ToolKind::Edit => edit_default(policy, call, ctx, tool),
        ToolKind::Exec => exec_default(policy, call, tool),
    };
    let source = Source::Default { kind: request.kind, modes };
    if modes.bypass && verdict != Allow {
        return Decision {
            verdict: Allow,
            source,
            reason: format!(
                "default: {why}; bypassed (--dangerously-bypass-approvals-and-sandbox)"
            ),
        };
    }
    let reason = if verdict == Deny {
        format!("default: {why}; it needs approval, and the approval mode is never")
    } else {
        format!("default: {why} ({approval})")
    };
    Decision { verdict, source, reason }
}

fn edit_default(
    policy: &Policy,
    call: &Call,
    ctx: &CommandContext,
    tool: &str,
) -> (Verdict, String) {
    use Verdict::{Allow, Ask, Deny};
    let approval = policy.modes.approval;
    let outside = |why: String| (cell(approval, Ask, Ask, Deny), why);
    match policy.modes.sandbox {
        SandboxMode::DangerFullAccess => {
            return (
                cell(approval, Ask, Allow, Allow),
                "edits are unrestricted (danger-full-access)".to_owned(),
            );
        }
        SandboxMode::ReadOnly => return outside("the sandbox is read-only".to_owned()),
        SandboxMode::WorkspaceWrite => {}
    }
    let roots = edit_roots(policy, ctx);
    let mut paths = Vec::new();
    for subject in call.subjects() {
        let Subject::Edit(path) = subject else {
            return outside(format!("`{tool}` does not say which files it edits"));
        };
        match roots.place(path) {
            Placement::Writable => paths.push(path),
            Placement::Protected(protection) => return outside(protection.to_string()),
            Placement::Outside => {
                return outside(format!("`{}` is outside the writable roots", path.display()));
            }
        }
    }
    let shown = paths.iter().map(|p| format!("`{}`", p.display())).collect::<Vec<_>>().join(", ");
    (cell(approval, Ask, Allow, Allow), format!("{shown} is inside the writable roots"))
}

fn exec_default(policy: &Policy, call: &Call, tool: &str) -> (Verdict, String) {
    use Verdict::{Allow, Ask, Deny};
    let approval = policy.modes.approval;
    let mut worst = Severity::Safe;
    let mut commands = Vec::new();
    for subject in call.subjects() {
        match subject {
            Subject::Shell { command, classification } => {
                commands.push(command.as_str());
                worst = worst.max(classification.severity.clone());
                if let Some(hidden) = hidden_mention(policy, command) {
                    worst = worst.max(Severity::Dangerous {
                        reason: format!(
                            "`{}` names the hidden path `{hidden}` (credentials)",
                            shorten(command)
                        ),
                    });
                }
            }
            _ => worst = worst.max(Severity::Normal),
        }
    }
    let shown = if commands.is_empty() {
        format!("`{tool}`")
    } else {
        commands.iter().map(|c| format!("`{}`", shorten(c))).collect::<Vec<_>>().join(", ")
    };
    match worst {
        Severity::Safe => (Allow, format!("{shown} is known read-only")),
        Severity::Normal => {
            let contained =
                policy.sandbox_active || policy.modes.sandbox == SandboxMode::DangerFullAccess;
            let on_request = if contained { Allow } else { Ask };
            let why = match (approval, contained, policy.modes.sandbox) {
                (ApprovalMode::Untrusted, _, _) => format!("{shown} is not known read-only"),
                (_, _, SandboxMode::DangerFullAccess) => {
                    format!("{shown} runs without a sandbox (danger-full-access)")
                }
                (_, true, sandbox) => format!("{shown} runs sandboxed ({sandbox})"),
                (_, false, _) => format!("{shown} is not known read-only and no sandbox is active"),
            };
            (cell(approval, Ask, on_request, Allow), why)
        }
        Severity::Dangerous { reason } => (cell(approval, Ask, Ask, Deny), reason),
    }
}

/// The hidden path a command line names, as written (`~/.ssh`, `$HOME/.aws`, or absolute).
/// A heuristic on the text: the sandbox is what hides these paths from commands; this only
/// makes sure a command that names one is not run without asking.
fn hidden_mention(policy: &Policy, command: &str) -> Option<String> {
    let home = policy.home.as_deref();
    for hidden in &policy.hidden_paths {
        let mut spellings = vec![hidden.display().to_string()];
        if let Some(relative) = home.and_then(|home| hidden.strip_prefix(home).ok()) {
            let relative = relative.display();
            spellings.extend([
                format!("~/{relative}"),
                format!("$HOME/{relative}"),
                format!("${{HOME}}/{relative}"),
            ]);
        }
        for spelling in spellings {
            let mut rest = command;
            while let Some(at) = rest.find(&spelling) {
                let after = &rest[at + spelling.len()..];
                let boundary = after
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')));
                if boundary {
                    return Some(spelling);
                }
                rest = after;
            }
        }
    }
    None
}

fn shorten(text: &str) -> String {
    let text = crate::command::normalize_whitespace(text);
    if text.chars().count() <= 80 {
        return text;
    }
    let mut short: String = text.chars().take(79).collect();
    short.push('…');
    short
}
