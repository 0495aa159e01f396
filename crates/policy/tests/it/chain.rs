//! The decision chain: every default cell, deny-wins across levels, ask-beats-hook-allow,
//! session grants, project-before-user order, bypass, hidden paths, explanation strings.

use codecoder_policy::{
    ApprovalMode, Decision, HookVerdict, Modes, Policy, Request, RuleOrigin, RuleSet, SandboxMode,
    Source, ToolKind, Verdict, decide,
};
use codecoder_protocol::{CallKind, CallView};
use pretty_assertions::assert_eq;

use crate::support::{Workspace, view};

/// Three of the credential stores the product hides (`codecoder_sandbox::default_hidden_paths`).
fn hidden_paths(home: &std::path::Path) -> Vec<std::path::PathBuf> {
    [".ssh", ".aws", ".netrc"].iter().map(|relative| home.join(relative)).collect()
}

fn strings(rules: &[&str]) -> Vec<String> {
    rules.iter().map(|rule| (*rule).to_owned()).collect()
}

fn policy(workspace: &Workspace, sandbox: SandboxMode, approval: ApprovalMode) -> Policy {
    Policy {
        modes: Modes { sandbox, approval, bypass: false },
        sandbox_active: true,
        cwd: workspace.ws.clone(),
        writable_roots: vec![workspace.ws.clone(), workspace.tmp.clone()],
        hidden_paths: hidden_paths(&workspace.home),
        home: Some(workspace.home.clone()),
        protected_paths: Vec::new(),
        project_rules: RuleSet::empty(RuleOrigin::Project { root: workspace.ws.clone() }),
        user_rules: RuleSet::empty(RuleOrigin::User),
    }
}

fn with_rules(mut policy: Policy, project: [&[&str]; 3], user: [&[&str]; 3]) -> Policy {
    let origin = policy.project_rules.origin().clone();
    policy.project_rules =
        RuleSet::parse(&strings(project[0]), &strings(project[1]), &strings(project[2]), origin)
            .expect("project rules");
    policy.user_rules =
        RuleSet::parse(&strings(user[0]), &strings(user[1]), &strings(user[2]), RuleOrigin::User)
            .expect("user rules");
    policy
}

fn tool_for(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::ReadOnly => "read_file",
        ToolKind::Edit => "write_file",
        ToolKind::Exec => "run_command",
        ToolKind::Network => "web_fetch",
        ToolKind::Interactive => "ask_user",
        ToolKind::Other => "mcp__server__tool",
    }
}

struct Call<'a> {
    kind: ToolKind,
    keys: Vec<String>,
    hook: Option<HookVerdict>,
    session_grant: bool,
    tool: &'a str,
}

fn call(kind: ToolKind, key: &str) -> Call<'static> {
    Call {
        kind,
        keys: vec![key.to_owned()],
        hook: None,
        session_grant: false,
        tool: tool_for(kind),
    }
}

impl Call<'_> {
    fn hook(mut self, decision: Verdict, reason: Option<&str>) -> Self {
        self.hook = Some(HookVerdict { decision, reason: reason.map(str::to_owned) });
        self
    }

    fn granted(mut self) -> Self {
        self.session_grant = true;
        self
    }

    fn decide(&self, policy: &Policy) -> Decision {
        decide(
            policy,
            &Request {
                tool: self.tool,
                kind: self.kind,
                view: &view(self.tool, self.kind),
                permission_keys: &self.keys,
                hook: self.hook.as_ref(),
                session_grant: self.session_grant,
            },
        )
    }
}

use Verdict::{Allow as A, Ask as K, Deny as D};

/// A default-table row: what, kind, key, sandbox mode, sandbox active, verdicts under
/// untrusted, on-request and never.
type Row<'a> = (&'a str, ToolKind, &'a str, SandboxMode, bool, [Verdict; 3]);

#[test]
fn every_default_cell() {
    let workspace = Workspace::new();
    let outside = workspace.outside.join("x.txt").display().to_string();
    let outside_key = format!("edit:{outside}");
    let rows: Vec<Row<'_>> = vec![
        (
            "read",
            ToolKind::ReadOnly,
            "read:src/lib.rs",
            SandboxMode::WorkspaceWrite,
            true,
            [A, A, A],
        ),
        (
            "read hidden",
            ToolKind::ReadOnly,
            "read:~/.ssh/id_rsa",
            SandboxMode::WorkspaceWrite,
            true,
            [D, D, D],
        ),
        (
            "read the agent's environment",
            ToolKind::ReadOnly,
            "read:/proc/self/environ",
            SandboxMode::WorkspaceWrite,
            true,
            [D, D, D],
        ),
        (
            "read a thread's environment",
            ToolKind::ReadOnly,
            "read:/proc/1/task/1/environ",
            SandboxMode::DangerFullAccess,
            false,
            [D, D, D],
        ),
        (
            "interactive",
            ToolKind::Interactive,
            "ask_user",
            SandboxMode::WorkspaceWrite,
            true,
            [A, A, A],
        ),
        (
            "edit inside",
            ToolKind::Edit,
            "edit:src/lib.rs",
            SandboxMode::WorkspaceWrite,
            true,
            [K, A, A],
        ),
        (
            "edit in /tmp root",
            ToolKind::Edit,
            "edit:../tmp/scratch",
            SandboxMode::WorkspaceWrite,
            true,
            [K, A, A],
        ),
        (
            "edit outside",
            ToolKind::Edit,
            &outside_key,
            SandboxMode::WorkspaceWrite,
            true,
            [K, K, D],
        ),
        (
            "edit .git",
            ToolKind::Edit,
            "edit:.git/config",
            SandboxMode::WorkspaceWrite,
            true,
            [K, K, D],
        ),
        (
            "edit .codecoder",
            ToolKind::Edit,
            "edit:.codecoder/config.toml",
            SandboxMode::WorkspaceWrite,
            true,
            [K, K, D],
        ),
        (
            "edit without a path",
            ToolKind::Edit,
            "write_file",
            SandboxMode::WorkspaceWrite,
            true,
            [K, K, D],
        ),
        (
            "edit read-only sandbox",
            ToolKind::Edit,
            "edit:src/lib.rs",
            SandboxMode::ReadOnly,
            true,
            [K, K, D],
        ),
        (
            "edit full access",
            ToolKind::Edit,
            &outside_key,
            SandboxMode::DangerFullAccess,
            false,
            [K, A, A],
        ),
        ("exec safe", ToolKind::Exec, "shell:ls -la", SandboxMode::WorkspaceWrite, true, [A, A, A]),
        (
            "exec normal sandboxed",
            ToolKind::Exec,
            "shell:cargo test",
            SandboxMode::WorkspaceWrite,
            true,
            [K, A, A],
        ),
        (
            "exec normal unsandboxed",
            ToolKind::Exec,
            "shell:cargo test",
            SandboxMode::WorkspaceWrite,
            false,
            [K, K, A],
        ),
        (
            "exec normal full access",
            ToolKind::Exec,
            "shell:cargo test",
            SandboxMode::DangerFullAccess,
            false,
            [K, A, A],
        ),
        (
            "exec without a command",
            ToolKind::Exec,
            "job_kill",
            SandboxMode::WorkspaceWrite,
            true,
            [K, A, A],
        ),
        (
            "exec dangerous",
            ToolKind::Exec,
            "shell:git reset --hard",
            SandboxMode::WorkspaceWrite,
            true,
            [K, K, D],
        ),
        (
            "exec naming a hidden path",
            ToolKind::Exec,
            "shell:cat ~/.ssh/id_rsa",
            SandboxMode::WorkspaceWrite,
            true,
            [K, K, D],
        ),
        (
            "exec naming a hidden path by $HOME",
            ToolKind::Exec,
            "shell:ls $HOME/.aws",
            SandboxMode::WorkspaceWrite,
            true,
            [K, K, D],
        ),
        (
            "exec naming a look-alike",
            ToolKind::Exec,
            "shell:ls ~/.sshx ~/.ssh_old",
            SandboxMode::WorkspaceWrite,
            true,
            [A, A, A],
        ),
        (
            "network",
            ToolKind::Network,
            "web_fetch:docs.rs",
            SandboxMode::WorkspaceWrite,
            true,
            [K, K, A],
        ),
        (
            "other",
            ToolKind::Other,
            "mcp__server__tool",
            SandboxMode::WorkspaceWrite,
            true,
            [K, K, D],
        ),
    ];
    let mut failures = Vec::new();
    for (what, kind, key, sandbox, active, expected) in &rows {
        for (approval, expected) in
            [ApprovalMode::Untrusted, ApprovalMode::OnRequest, ApprovalMode::Never]
                .into_iter()
                .zip(expected)
        {
            let mut policy = policy(&workspace, *sandbox, approval);
            policy.sandbox_active = *active;
            let decision = call(*kind, key).decide(&policy);
            if decision.verdict != *expected {
                failures.push(format!("{what} ({approval}): expected {expected}, got {decision}"));
            }
            // Bypass allows whatever the default asked for or denied by mode; the hidden
            // path deny (credential stores, a process's environment) stays.
            policy.modes.bypass = true;
            let bypassed = call(*kind, key).decide(&policy);
            let hidden = what.starts_with("read hidden") || what.ends_with("environment");
            let expected_bypassed = if hidden { D } else { A };
            if bypassed.verdict != expected_bypassed {
                failures.push(format!(
                    "{what} ({approval}, bypass): expected {expected_bypassed}, got {bypassed}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn explanations() {
    let workspace = Workspace::new();
    let on_request = policy(&workspace, SandboxMode::WorkspaceWrite, ApprovalMode::OnRequest);
    let rules = with_rules(
        on_request.clone(),
        [&[], &[], &["run_command(git push*)"]],
        [&[], &["Bash(git commit:*)"], &[]],
    );
    let line = |decision: Decision| decision.to_string();

    assert_eq!(
        line(call(ToolKind::Exec, "shell:git push origin main").decide(&rules)),
        "deny — project rule deny `run_command(git push*)`"
    );
    assert_eq!(
        line(call(ToolKind::Exec, "shell:git reset --hard").decide(&on_request)),
        "ask — default: `git reset --hard` discards uncommitted work (on-request)"
    );
    let never = policy(&workspace, SandboxMode::WorkspaceWrite, ApprovalMode::Never);
    assert_eq!(
        line(call(ToolKind::Exec, "shell:git reset --hard").decide(&never)),
        "deny — default: `git reset --hard` discards uncommitted work; it needs approval, and the approval mode is never"
    );
    assert_eq!(
        line(call(ToolKind::Exec, "shell:cargo test").decide(&on_request)),
        "allow — default: `cargo test` runs sandboxed (workspace-write) (on-request)"
    );
    assert_eq!(
        line(call(ToolKind::Exec, "shell:ls").decide(&on_request)),
        "allow — default: `ls` is known read-only (on-request)"
    );
    assert_eq!(
        line(call(ToolKind::Exec, "shell:cargo test").granted().decide(&on_request)),
        "allow — allowed for this session"
    );
    assert_eq!(
        line(
            call(ToolKind::Exec, "shell:ls")
                .hook(Verdict::Deny, Some("no shell on Fridays"))
                .decide(&on_request)
        ),
        "deny — PreToolUse hook: no shell on Fridays"
    );
    assert_eq!(
        line(
            call(ToolKind::Exec, "shell:git commit -m x").hook(Verdict::Allow, None).decide(&rules)
        ),
        "ask — user rule ask `Bash(git commit:*)` (an ask rule beats the hook's allow)"
    );
    assert_eq!(
        line(call(ToolKind::Edit, "edit:src/a.rs").decide(&on_request)),
        format!(
            "allow — default: `{}` is inside the writable roots (on-request)",
            workspace.ws.join("src/a.rs").display()
        )
    );
    assert_eq!(
        line(call(ToolKind::ReadOnly, "read:~/.ssh/id_rsa").decide(&on_request)),
        format!(
            "deny — default: `{}` is under the hidden path `{}` (credentials); a user allow rule can lift this",
            workspace.home.join(".ssh/id_rsa").display(),
            workspace.home.join(".ssh").display()
        )
    );
    let mut bypass = on_request.clone();
    bypass.modes = Modes::BYPASS;
    assert_eq!(
        line(call(ToolKind::Exec, "shell:git reset --hard").decide(&bypass)),
        "allow — default: `git reset --hard` discards uncommitted work; bypassed (--dangerously-bypass-approvals-and-sandbox)"
    );
}

#[test]
fn a_deny_at_any_level_wins() {
    let workspace = Workspace::new();
    let base = policy(&workspace, SandboxMode::WorkspaceWrite, ApprovalMode::OnRequest);
    let project_deny =
        with_rules(base.clone(), [&[], &[], &["Bash(rm:*)"]], [&["Bash(rm:*)"], &[], &[]]);
    let user_deny =
        with_rules(base.clone(), [&["Bash(rm:*)"], &[], &[]], [&[], &[], &["Bash(rm:*)"]]);
    let rm = || call(ToolKind::Exec, "shell:rm x");

    // A hook allow, a session grant, an allow at the other level: the deny still wins.
    for decision in [
        rm().hook(Verdict::Allow, None).decide(&project_deny),
        rm().granted().decide(&project_deny),
    ] {
        assert_eq!(
            decision.source,
            Source::ProjectRule { rule: "Bash(rm:*)".to_owned(), list: Verdict::Deny }
        );
    }
    for decision in [
        rm().hook(Verdict::Allow, None).decide(&user_deny),
        rm().granted().decide(&user_deny),
        rm().decide(&user_deny),
    ] {
        assert_eq!(decision.verdict, D);
        assert_eq!(
            decision.source,
            Source::UserRule { rule: "Bash(rm:*)".to_owned(), list: Verdict::Deny }
        );
    }
    // A hook deny beats every allow.
    let allowed =
        with_rules(base.clone(), [&["Bash(ls:*)"], &[], &[]], [&["Bash(ls:*)"], &[], &[]]);
    let decision =
        call(ToolKind::Exec, "shell:ls").granted().hook(Verdict::Deny, None).decide(&allowed);
    assert_eq!((decision.verdict, decision.source), (D, Source::Hook));
    // Hidden paths beat a hook allow, a session grant and a project allow.
    let project_allows =
        with_rules(base.clone(), [&["read(~/.ssh/**)"], &[], &[]], [&[], &[], &[]]);
    let decision = call(ToolKind::ReadOnly, "read:~/.ssh/config")
        .hook(Verdict::Allow, None)
        .granted()
        .decide(&project_allows);
    assert_eq!(decision.verdict, D);
    assert!(matches!(decision.source, Source::HiddenPath { .. }), "{decision}");
    // Bypass does not lift rule denies or hook denies.
    let mut bypass = user_deny.clone();
    bypass.modes = Modes::BYPASS;
    assert_eq!(rm().decide(&bypass).verdict, D);
    assert_eq!(
        call(ToolKind::Exec, "shell:ls").hook(Verdict::Deny, None).decide(&bypass).verdict,
        D
    );
}

#[test]
fn a_user_allow_rule_lifts_a_hidden_path() {
    let workspace = Workspace::new();
    let base = policy(&workspace, SandboxMode::WorkspaceWrite, ApprovalMode::OnRequest);
    let user_allows = with_rules(base, [&[], &[], &[]], [&["read(~/.ssh/config)"], &[], &[]]);
    let decision = call(ToolKind::ReadOnly, "read:~/.ssh/config").decide(&user_allows);
    assert_eq!(decision.verdict, A);
    assert_eq!(
        decision.source,
        Source::UserRule { rule: "read(~/.ssh/config)".to_owned(), list: Verdict::Allow }
    );
    assert_eq!(call(ToolKind::ReadOnly, "read:~/.ssh/id_rsa").decide(&user_allows).verdict, D);
    // Edits under a hidden path are denied too.
    assert_eq!(call(ToolKind::Edit, "edit:~/.aws/credentials").decide(&user_allows).verdict, D);
}

#[test]
fn ask_rules_beat_a_hook_allow_but_nothing_else_does() {
    let workspace = Workspace::new();
    let base = policy(&workspace, SandboxMode::WorkspaceWrite, ApprovalMode::Untrusted);
    let project_ask = with_rules(base.clone(), [&[], &["Bash(npm:*)"], &[]], [&[], &[], &[]]);
    let decision =
        call(ToolKind::Exec, "shell:npm install").hook(Verdict::Allow, None).decide(&project_ask);
    assert_eq!(decision.verdict, K);
    assert_eq!(
        decision.source,
        Source::ProjectRule { rule: "Bash(npm:*)".to_owned(), list: Verdict::Ask }
    );
    // Without an ask rule the hook's allow skips the default's prompt (untrusted asks).
    let decision =
        call(ToolKind::Exec, "shell:npm install").hook(Verdict::Allow, Some("ok")).decide(&base);
    assert_eq!((decision.verdict, decision.source), (A, Source::Hook));
    // A hook ask beats an allow rule.
    let allows = with_rules(base.clone(), [&["Bash(npm:*)"], &[], &[]], [&[], &[], &[]]);
    let decision =
        call(ToolKind::Exec, "shell:npm install").hook(Verdict::Ask, None).decide(&allows);
    assert_eq!((decision.verdict, decision.source), (K, Source::Hook));
}

#[test]
fn session_grants_come_before_rules_and_defaults() {
    let workspace = Workspace::new();
    let base = policy(&workspace, SandboxMode::WorkspaceWrite, ApprovalMode::Never);
    let asks = with_rules(base.clone(), [&[], &["Bash(git:*)"], &[]], [&[], &["Bash(git:*)"], &[]]);
    let decision = call(ToolKind::Exec, "shell:git push --force").granted().decide(&asks);
    assert_eq!((decision.verdict, decision.source), (A, Source::SessionGrant));
    // Without the grant the project ask decides (and the default would deny under never).
    let decision = call(ToolKind::Exec, "shell:git push --force").decide(&asks);
    assert_eq!(decision.verdict, K);
    let decision = call(ToolKind::Exec, "shell:git push --force").decide(&base);
    assert_eq!(decision.verdict, D);
}

#[test]
fn project_rules_come_before_user_rules() {
    let workspace = Workspace::new();
    let base = policy(&workspace, SandboxMode::WorkspaceWrite, ApprovalMode::OnRequest);
    let project_allows =
        with_rules(base.clone(), [&["Bash(make:*)"], &[], &[]], [&[], &["Bash(make:*)"], &[]]);
    let decision = call(ToolKind::Exec, "shell:make").decide(&project_allows);
    assert_eq!(
        decision.source,
        Source::ProjectRule { rule: "Bash(make:*)".to_owned(), list: Verdict::Allow }
    );
    let project_asks =
        with_rules(base.clone(), [&[], &["Bash(make:*)"], &[]], [&["Bash(make:*)"], &[], &[]]);
    let decision = call(ToolKind::Exec, "shell:make").decide(&project_asks);
    assert_eq!(
        decision.source,
        Source::ProjectRule { rule: "Bash(make:*)".to_owned(), list: Verdict::Ask }
    );
    // The user's rules decide when the project has no opinion.
    let user_allows =
        with_rules(base, [&["Bash(cargo:*)"], &[], &[]], [&["Bash(make:*)"], &[], &[]]);
    let decision = call(ToolKind::Exec, "shell:make all").decide(&user_allows);
    assert_eq!(
        decision.source,
        Source::UserRule { rule: "Bash(make:*)".to_owned(), list: Verdict::Allow }
    );
    // An allow rule turns a dangerous default into an allow: the rule is explicit.
    let decision = call(ToolKind::Exec, "shell:git push --force").decide(&with_rules(
        policy(&workspace, SandboxMode::WorkspaceWrite, ApprovalMode::Never),
        [&[], &[], &[]],
        [&["Bash(git push:*)"], &[], &[]],
    ));
    assert_eq!(decision.verdict, A);
}

#[test]
fn modes_parse_print_and_serialize_with_the_cli_spellings() {
    for (text, mode) in [
        ("read-only", SandboxMode::ReadOnly),
        ("workspace-write", SandboxMode::WorkspaceWrite),
        ("danger-full-access", SandboxMode::DangerFullAccess),
    ] {
        assert_eq!(text.parse::<SandboxMode>(), Ok(mode));
        assert_eq!(mode.to_string(), text);
        assert_eq!(serde_json::to_string(&mode).expect("serialize"), format!("\"{text}\""));
        assert_eq!(
            serde_json::from_str::<SandboxMode>(&format!("\"{text}\"")).expect("deserialize"),
            mode
        );
    }
    for (text, mode) in [
        ("untrusted", ApprovalMode::Untrusted),
        ("on-request", ApprovalMode::OnRequest),
        ("never", ApprovalMode::Never),
    ] {
        assert_eq!(text.parse::<ApprovalMode>(), Ok(mode));
        assert_eq!(mode.to_string(), text);
        assert_eq!(serde_json::to_string(&mode).expect("serialize"), format!("\"{text}\""));
    }
    assert_eq!(
        "rw".parse::<SandboxMode>().map_err(|err| err.to_string()),
        Err("unknown sandbox mode `rw`: expected one of read-only, workspace-write, danger-full-access".to_owned())
    );
    assert_eq!(
        "on-failure".parse::<ApprovalMode>().map_err(|err| err.to_string()),
        Err("unknown approval mode `on-failure`: expected one of untrusted, on-request, never"
            .to_owned())
    );
    assert_eq!(
        Modes::FULL_AUTO,
        Modes {
            sandbox: SandboxMode::WorkspaceWrite,
            approval: ApprovalMode::OnRequest,
            bypass: false
        }
    );
    assert_eq!(
        Modes::BYPASS,
        Modes {
            sandbox: SandboxMode::DangerFullAccess,
            approval: ApprovalMode::Never,
            bypass: true
        }
    );
}

#[test]
fn protected_writes_are_never_silent() {
    let workspace = Workspace::new();
    // The workspace under another writable root, as with a workspace under `/tmp`.
    let nested = workspace.tmp.join("ws");
    fs_err::create_dir_all(nested.join(".git/hooks")).expect("mkdir");
    fs_err::create_dir_all(nested.join("src")).expect("mkdir");
    let mut base = policy(&workspace, SandboxMode::WorkspaceWrite, ApprovalMode::OnRequest);
    base.cwd = nested.clone();
    base.writable_roots = vec![nested.clone(), workspace.tmp.clone()];
    base.protected_paths = vec![workspace.home.join(".codecoder")];
    let codecoder_home = format!("edit:{}/.codecoder/config.toml", workspace.home.display());
    for key in [
        "edit:.git/hooks/pre-commit",
        "edit:.git/config",
        "edit:.codecoder/config.toml",
        "edit:.agents/x",
        "edit:.claude/settings.json",
        "edit:.mcp.json",
        "edit:src/../.git/hooks/post-checkout",
        &codecoder_home,
    ] {
        for (approval, expected) in
            [(ApprovalMode::Untrusted, K), (ApprovalMode::OnRequest, K), (ApprovalMode::Never, D)]
        {
            let mut policy = base.clone();
            policy.modes.approval = approval;
            let decision = call(ToolKind::Edit, key).decide(&policy);
            assert_eq!(decision.verdict, expected, "{key} ({approval}): {decision}");
            assert!(matches!(decision.source, Source::Protected { .. }), "{key}: {decision}");
            assert!(decision.reason.contains("is protected: `"), "{key}: {decision}");
        }
    }
    let decision = call(ToolKind::Edit, "edit:.git/hooks/pre-commit").decide(&base);
    let ws = nested.display();
    assert_eq!(
        decision.reason,
        format!(
            "`{ws}/.git/hooks/pre-commit` is protected: `.git` inside the writable root {ws} \
             (files there run code later); a protected write is always asked (on-request)"
        )
    );
    // An ordinary file next to them is not.
    assert_eq!(call(ToolKind::Edit, "edit:src/lib.rs").decide(&base).verdict, A);
    // One protected path among several makes the call protected (apply_patch).
    let mut patch = call(ToolKind::Edit, "edit:src/lib.rs");
    patch.keys.push("edit:.mcp.json".to_owned());
    patch.tool = "apply_patch";
    assert_eq!(patch.decide(&base).verdict, K);
    // A symlink planted in the workspace does not get around it.
    std::os::unix::fs::symlink(nested.join(".git/hooks"), nested.join("src/h")).expect("symlink");
    assert_eq!(call(ToolKind::Edit, "edit:src/h/pre-push").decide(&base).verdict, K);

    // A hook's allow or a project allow rule does not lift it; a user `edit(PATTERN)` allow
    // rule, a session grant and bypass do.
    let key = "edit:.git/hooks/pre-commit";
    assert_eq!(call(ToolKind::Edit, key).hook(Verdict::Allow, None).decide(&base).verdict, K);
    let project = with_rules(base.clone(), [&["edit(.git/**)"], &[], &[]], [&[], &[], &[]]);
    assert_eq!(call(ToolKind::Edit, key).decide(&project).verdict, K);
    let bare = with_rules(base.clone(), [&[], &[], &[]], [&["edit"], &[], &[]]);
    assert_eq!(call(ToolKind::Edit, key).decide(&bare).verdict, K);
    let user = with_rules(base.clone(), [&[], &[], &[]], [&["edit(.git/hooks/**)"], &[], &[]]);
    let decision = call(ToolKind::Edit, key).decide(&user);
    assert_eq!(decision.verdict, A, "{decision}");
    assert!(decision.reason.contains("lifts: "), "{decision}");
    assert_eq!(call(ToolKind::Edit, key).granted().decide(&base).verdict, A);
    let mut bypass = base.clone();
    bypass.modes = Modes::BYPASS;
    assert_eq!(call(ToolKind::Edit, key).decide(&bypass).verdict, A);
}

#[test]
fn mcp_and_destructive_calls_are_known_by_their_view_not_their_name() {
    let workspace = Workspace::new();
    let on_request = policy(&workspace, SandboxMode::WorkspaceWrite, ApprovalMode::OnRequest);
    let decide = |tool: &str, kind: ToolKind, view: &CallView| {
        let keys = vec![tool.to_owned()];
        let request =
            Request { tool, kind, view, permission_keys: &keys, hook: None, session_grant: false };
        decide(&on_request, &request).to_string()
    };
    let mcp = |destructive: bool| CallView {
        kind: CallKind::Mcp { server: "srv".to_owned(), tool: "drop".to_owned() },
        destructive,
        ..CallView::default()
    };
    // A tool of an MCP server, whatever its name.
    assert_eq!(
        decide("srv_drop", ToolKind::Network, &mcp(false)),
        "ask — default: `srv_drop` is an MCP server's tool and runs outside the sandbox (on-request)"
    );
    assert_eq!(
        decide("srv_drop", ToolKind::Other, &mcp(true)),
        "ask — default: `srv_drop` is marked destructive by its MCP server (on-request)"
    );
    // A name that looks like an MCP tool's says nothing by itself.
    let fetch = CallView { kind: CallKind::Fetch, ..CallView::default() };
    assert_eq!(
        decide("mcp__srv__drop", ToolKind::Network, &fetch),
        "ask — default: `mcp__srv__drop` reaches the network (on-request)"
    );
    assert_eq!(
        decide("mcp__srv__drop", ToolKind::Other, &CallView::default()),
        "ask — default: `mcp__srv__drop` is not a known kind of tool (on-request)"
    );
}
