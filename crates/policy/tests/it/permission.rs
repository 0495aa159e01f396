//! The permission mode over the chain: plan mode refuses every call that is not read-only
//! (whatever the approval mode, bypass included) with a reason for the model; acceptEdits
//! allows edits inside the writable roots the default would ask about, and nothing else; the
//! switch cycles and remembers the mode plan mode left.

use codecoder_policy::{
    ApprovalMode, ChainPolicy, HookVerdict, Modes, PermissionMode, PermissionSwitch, Policy,
    RuleOrigin, RuleSet, SandboxMode, Source, ToolKind, Verdict,
};
use codecoder_protocol::{CallKind, CallView};

use crate::support::{Workspace, view};

fn policy(workspace: &Workspace, modes: Modes) -> Policy {
    Policy {
        modes,
        sandbox_active: true,
        cwd: workspace.ws.clone(),
        writable_roots: vec![workspace.ws.clone(), workspace.tmp.clone()],
        hidden_paths: Vec::new(),
        home: Some(workspace.home.clone()),
        protected_paths: Vec::new(),
        project_rules: RuleSet::empty(RuleOrigin::Project { root: workspace.ws.clone() }),
        user_rules: RuleSet::empty(RuleOrigin::User),
    }
}

fn chain(workspace: &Workspace, modes: Modes, mode: PermissionMode) -> ChainPolicy {
    ChainPolicy::with_permission(policy(workspace, modes), PermissionSwitch::new(mode))
}

const UNTRUSTED: Modes = Modes {
    sandbox: SandboxMode::WorkspaceWrite,
    approval: ApprovalMode::Untrusted,
    bypass: false,
};

#[test]
fn plan_mode_refuses_what_is_not_read_only() {
    let workspace = Workspace::new();
    let edit_key = format!("edit:{}", workspace.ws.join("a.txt").display());
    for modes in [UNTRUSTED, Modes::FULL_AUTO, Modes::BYPASS] {
        let chain = chain(&workspace, modes, PermissionMode::Plan);
        let refused = [
            ("write_file", ToolKind::Edit, edit_key.clone()),
            ("edit", ToolKind::Edit, edit_key.clone()),
            ("apply_patch", ToolKind::Edit, edit_key.clone()),
            ("run_command", ToolKind::Exec, "shell:touch made.txt".to_owned()),
            ("run_command", ToolKind::Exec, "shell:ls && rm -rf build".to_owned()),
            ("mcp__srv__write", ToolKind::Network, "mcp__srv__write".to_owned()),
            ("mcp__srv__other", ToolKind::Other, "mcp__srv__other".to_owned()),
        ];
        for (tool, kind, key) in refused {
            // A hook's allow does not lift it either.
            let allow = HookVerdict { decision: Verdict::Allow, reason: None };
            for hook in [None, Some(&allow)] {
                let decision = chain.decide_call(
                    tool,
                    kind,
                    &view(tool, kind),
                    std::slice::from_ref(&key),
                    hook,
                    true,
                );
                assert_eq!(decision.verdict, Verdict::Deny, "{tool} {key} under {modes:?}");
                assert_eq!(decision.source, Source::PermissionMode { mode: PermissionMode::Plan });
                assert!(decision.reason.contains("You are in plan mode"), "{}", decision.reason);
                assert!(decision.reason.contains("exit_plan_mode"), "{}", decision.reason);
            }
        }
        let passed = [
            ("read_file", ToolKind::ReadOnly, "read:a.txt"),
            ("ask_user", ToolKind::Interactive, "ask_user"),
            ("exit_plan_mode", ToolKind::Interactive, "exit_plan_mode"),
            ("run_command", ToolKind::Exec, "shell:git status"),
            ("run_command", ToolKind::Exec, "shell:ls -la | head"),
            ("web_fetch", ToolKind::Network, "web_fetch:example.com"),
        ];
        for (tool, kind, key) in passed {
            let decision =
                chain.decide_call(tool, kind, &view(tool, kind), &[key.to_owned()], None, false);
            assert_ne!(
                decision.source,
                Source::PermissionMode { mode: PermissionMode::Plan },
                "{tool} {key} goes through the chain as usual"
            );
        }
    }
}

#[test]
fn accept_edits_allows_edits_inside_the_roots_only() {
    let workspace = Workspace::new();
    let chain = chain(&workspace, UNTRUSTED, PermissionMode::AcceptEdits);
    let inside = format!("edit:{}", workspace.ws.join("src/a.rs").display());
    let decision = chain.decide_call(
        "edit",
        ToolKind::Edit,
        &view("edit", ToolKind::Edit),
        std::slice::from_ref(&inside),
        None,
        false,
    );
    assert_eq!(decision.verdict, Verdict::Allow, "{decision}");
    assert_eq!(decision.source, Source::PermissionMode { mode: PermissionMode::AcceptEdits });
    // Outside the roots, a protected path, and a command: still asked.
    let outside = format!("edit:{}", workspace.outside.join("b.rs").display());
    let protected = format!("edit:{}", workspace.ws.join(".git/config").display());
    for key in [outside, protected] {
        let decision = chain.decide_call(
            "edit",
            ToolKind::Edit,
            &view("edit", ToolKind::Edit),
            std::slice::from_ref(&key),
            None,
            false,
        );
        assert_eq!(decision.verdict, Verdict::Ask, "{key}: {decision}");
    }
    let command = chain.decide_call(
        "run_command",
        ToolKind::Exec,
        &view("run_command", ToolKind::Exec),
        &["shell:touch a".to_owned()],
        None,
        false,
    );
    assert_eq!(command.verdict, Verdict::Ask, "{command}");
    // The default mode asks for the same edit under untrusted.
    chain.permission().set(PermissionMode::Default);
    let decision = chain.decide_call(
        "edit",
        ToolKind::Edit,
        &view("edit", ToolKind::Edit),
        &[inside],
        None,
        false,
    );
    assert_eq!(decision.verdict, Verdict::Ask, "{decision}");
}

#[test]
fn the_switch_cycles_and_leaving_plan_mode_restores_the_mode_before_it() {
    let switch = PermissionSwitch::new(PermissionMode::Default);
    assert_eq!(switch.cycle(), PermissionMode::AcceptEdits);
    assert_eq!(switch.cycle(), PermissionMode::Plan);
    assert!(switch.planning());
    // Another holder sees the same mode.
    let other = switch.clone();
    assert_eq!(other.leave_plan(), PermissionMode::AcceptEdits);
    assert_eq!(switch.get(), PermissionMode::AcceptEdits);
    // Setting plan twice keeps the mode it left the first time.
    switch.set(PermissionMode::Plan);
    switch.set(PermissionMode::Plan);
    assert_eq!(switch.leave_plan(), PermissionMode::AcceptEdits);
    // Outside plan mode, leaving changes nothing.
    assert_eq!(switch.leave_plan(), PermissionMode::AcceptEdits);
    let started_in_plan = PermissionSwitch::new(PermissionMode::Plan);
    assert_eq!(started_in_plan.leave_plan(), PermissionMode::Default);
    assert_eq!(switch.cycle(), PermissionMode::Plan);
    assert_eq!(switch.cycle(), PermissionMode::Default);
    for mode in ["default", "acceptEdits", "plan"] {
        assert_eq!(mode.parse::<PermissionMode>().unwrap().as_str(), mode);
    }
    assert!("bypassPermissions".parse::<PermissionMode>().is_err());
}

#[test]
fn plan_mode_lets_a_fetch_through_by_its_view() {
    let workspace = Workspace::new();
    let chain = chain(&workspace, UNTRUSTED, PermissionMode::Plan);
    let keys = ["download".to_owned()];
    let plan = Source::PermissionMode { mode: PermissionMode::Plan };
    let fetch = CallView { kind: CallKind::Fetch, ..CallView::default() };
    let decision = chain.decide_call("download", ToolKind::Network, &fetch, &keys, None, false);
    assert_ne!(decision.source, plan, "{decision}");
    let other = CallView::default();
    let decision = chain.decide_call("download", ToolKind::Network, &other, &keys, None, false);
    assert_eq!(decision.source, plan, "{decision}");
}
