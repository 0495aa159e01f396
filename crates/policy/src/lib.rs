//! Approval policy logic for codecoder: the sandbox and approval modes, shell command
//! classification, permission rules, and the decision chain that combines them with hooks
//! and session grants. Pure logic: no I/O beyond canonicalizing paths that exist.
//! `ChainPolicy` is the chain as the kernel's `ApprovalPolicy`, with an approval mode that can
//! change while the session runs.
//!
//! - `mode`: `Modes` over protocol's `SandboxMode` (`read-only | workspace-write |
//!   danger-full-access`) and `ApprovalMode` (`untrusted | on-request | never`), with the
//!   `--full-auto` and `--yolo` presets. The verdicts (`Verdict`, also a rule's list) and tool
//!   kinds (`ToolKind`) are protocol's too.
//! - `command`: `classify(command, ctx)` splits a shell line into parts and judges each
//!   Safe, Normal or Dangerous, with a reason naming the part.
//! - `rules`: `RuleSet::parse(allow, ask, deny, origin)` and matching.
//! - `chain`: `decide(policy, request)` → `Decision { verdict, source, reason }`.
//! - `approval`: `ChainPolicy`, the chain behind the kernel's approval seam, with the
//!   permission mode (`PermissionSwitch`): plan mode refuses every call that is not read-only
//!   before the chain runs; acceptEdits allows an edit inside the writable roots the default
//!   would ask about.
//! - `protect`: `Guard`, the one list of protected paths (the chain, the file tools, the
//!   sandbox and `doctor` use it).
//!
//! # The chain
//!
//! Hook → session grant → project rules → user rules → default; the first level with an
//! opinion decides, except that a deny anywhere wins (hook deny, project or user deny rule,
//! reads and edits under a hidden path) and an ask rule beats a hook allow. Within one rule
//! set, deny beats ask beats allow.
//!
//! # Defaults
//!
//! | kind | untrusted | on-request | never |
//! |---|---|---|---|
//! | ReadOnly | allow | allow | allow |
//! | Interactive | allow | allow | allow |
//! | Edit inside the writable roots (workspace-write; not protected) | ask | allow | allow |
//! | Edit of a protected path (`protect::Guard`; any sandbox mode but danger-full-access) | ask | ask | deny |
//! | Edit outside the roots, with no path, or sandbox read-only | ask | ask | deny |
//! | Edit under danger-full-access | ask | allow | allow |
//! | Exec Safe | allow | allow | allow |
//! | Exec Normal (sandbox active, or danger-full-access) | ask | allow | allow |
//! | Exec Normal (a restricted sandbox mode but no active backend) | ask | ask | allow |
//! | Exec Dangerous, or naming a hidden path (`cat ~/.ssh/id_rsa`) | ask | ask | deny |
//! | Network | ask | ask | allow |
//! | Other | ask | ask | allow |
//!
//! Protected paths (`protect`): `.git` (and the git dir a `.git` file points to, and the
//! `core.hooksPath` directory), `.codecoder`, `.agents`, `.claude/settings*.json` and `.mcp.json`
//! anywhere below a writable root, and codecoder's home (`Policy::protected_paths`). An edit of
//! one is never silent: it is asked (denied under `never`) whatever a hook or a project rule
//! allows; only a user `edit(PATTERN)` allow rule, a "for this session" answer or bypass lets it
//! through without asking.
//!
//! Reads and edits under a hidden path (`Policy::hidden_paths`: the sandbox crate's default list
//! plus what the caller adds) are
//! denied before any of this, unless a *user* allow rule covers them. Bypass (`--yolo`) turns
//! every default ask and deny into allow; hook denies, rule denies and hidden paths still
//! apply. An Exec call without a `shell:` key counts as Normal.
//!
//! What a call is comes from its `CallView` (on the kernel's `ApprovalQuery`): whether it is an
//! MCP server's tool or marked destructive, whether a network call only fetches (plan mode lets
//! it through), and which rules' subject a call that names no subject belongs to. Only a rule
//! that names a tool (`mcp__server__tool`, `job_kill`) matches tool names: that is the user's
//! text.
//!
//! Invariants: every decision carries its source and a one-line reason; nothing here panics
//! on any input.

#![warn(missing_docs)]

mod approval;
pub mod chain;
pub mod command;
mod error;
pub mod mode;
mod paths;
pub mod protect;
pub mod rules;

pub use approval::ChainPolicy;
pub use chain::{Decision, Policy, Request, Source, decide, edits_inside_roots, plan_refusal};
pub use codecoder_kernel::HookVerdict;
pub use codecoder_protocol::{ToolKind, Verdict};
pub use command::{Classification, CommandContext, Part, Severity, classify};
pub use error::{Error, Result, RuleError, RuleProblem};
pub use mode::{ApprovalMode, Modes, PermissionMode, PermissionSwitch, SandboxMode};
pub use paths::{normalize_lexically, resolve};
pub use protect::{GitEnv, Guard, Protection};
pub use rules::{Call, Rule, RuleOrigin, RuleSet, Subject};
