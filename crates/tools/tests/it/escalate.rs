//! `run_command` under a sandbox that refuses: the escalation flow. The "sandbox" here is a
//! stand-in stage executable that always fails the way a real denial does (a write outside the
//! roots, "Read-only file system"), so the test is about the flow, not a backend.

use std::path::Path;
use std::sync::Arc;

use codecoder_protocol::{ApprovalDecision, AskUserAnswer, DecidedBy};
use codecoder_sandbox::{Backend, Confinement, FsAccess, Sandbox, SandboxPolicy};
use codecoder_tools::{Escalation, EscalationSetting, StandaloneEnv};
use serde_json::json;

use crate::support::{Fixture, text};

fn refusing_stage(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("refusing-stage");
    fs_err::write(
        &path,
        "#!/bin/sh\necho \"touch: cannot touch '/etc/blocked': Read-only file system\" >&2\nexit 1\n",
    )
    .unwrap();
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn fixture(escalation: Escalation, decision: ApprovalDecision) -> Fixture {
    let mut fixture = Fixture::with(|config| {
        // Beside the working directory, in the fixture's temp dir.
        let stage = refusing_stage(config.cwd.parent().unwrap());
        let policy = SandboxPolicy {
            access: FsAccess::WorkspaceWrite,
            writable_roots: vec![config.cwd.clone()],
            network: false,
            network_proxy: None,
            protected_paths: Vec::new(),
            hidden_paths: Vec::new(),
        };
        config.confinement =
            Confinement::Sandboxed(Arc::new(Sandbox::new(policy, Backend::Landlock, stage)));
        config.escalation = EscalationSetting::new(escalation);
    });
    fixture.env = StandaloneEnv::new(AskUserAnswer::Declined, 1 << 20).with_approval(decision);
    fixture
}

#[test]
fn never_returns_the_denial_with_its_reason() {
    let fixture = fixture(Escalation::Never, ApprovalDecision::AllowOnce);
    let output = fixture.call("run_command", json!({ "command": "echo hello" })).unwrap();
    let out = text(&output);
    assert!(output.is_error, "{out}");
    assert!(out.contains("writing /etc/blocked was blocked by the sandbox"), "{out}");
    assert!(out.contains("approval mode is `never`"), "{out}");
    assert!(fixture.env.approval_requests().is_empty());
}

#[test]
fn an_approved_escalation_runs_the_command_outside_the_sandbox() {
    let fixture = fixture(Escalation::Ask, ApprovalDecision::AllowOnce);
    let output = fixture.call("run_command", json!({ "command": "echo hello" })).unwrap();
    let out = text(&output);
    assert!(!output.is_error, "{out}");
    assert!(out.contains("hello") && out.contains("ran again without the sandbox"), "{out}");
    assert_eq!(fixture.env.approval_requests(), ["run `echo hello` again without the sandbox"]);
    // Allowed once: the next denial asks again.
    fixture.call("run_command", json!({ "command": "echo hello" })).unwrap();
    assert_eq!(fixture.env.approval_requests().len(), 2);
}

#[test]
fn a_session_approval_is_remembered_for_that_command() {
    let fixture = fixture(Escalation::Ask, ApprovalDecision::AllowForSession);
    for _ in 0..3 {
        let out = text(&fixture.call("run_command", json!({ "command": "echo again" })).unwrap());
        assert!(out.contains("again"), "{out}");
    }
    assert_eq!(fixture.env.approval_requests().len(), 1);
    // Another command is another question.
    fixture.call("run_command", json!({ "command": "echo other" })).unwrap();
    assert_eq!(fixture.env.approval_requests().len(), 2);
}

#[test]
fn a_declined_escalation_says_so_and_runs_nothing_more() {
    let fixture = fixture(
        Escalation::Ask,
        ApprovalDecision::DenyWithFeedback { feedback: "use the workspace".to_owned() },
    );
    let marker = fixture.cwd.join("ran");
    let command = format!("touch '{}'", marker.display());
    let output = fixture.call("run_command", json!({ "command": command })).unwrap();
    let out = text(&output);
    assert!(output.is_error, "{out}");
    assert!(out.contains("declined to run it outside the sandbox: use the workspace"), "{out}");
    assert!(!marker.exists(), "the command must not have run unconfined");
}

#[test]
fn a_session_approval_covers_later_escalations_of_the_same_command_prefix() {
    let fixture = fixture(Escalation::Ask, ApprovalDecision::AllowForSession);
    // `true` ignores its arguments: the unconfined retries change nothing.
    for command in ["true build --release", "true build -v", "true --quiet build"] {
        let out = text(&fixture.call("run_command", json!({ "command": command })).unwrap());
        assert!(out.contains("ran again without the sandbox"), "{out}");
    }
    assert_eq!(
        fixture.env.approval_requests(),
        ["run `true build --release` again without the sandbox"]
    );
    // Another prefix, and a line with one more part, are other questions.
    fixture.call("run_command", json!({ "command": "true check" })).unwrap();
    fixture.call("run_command", json!({ "command": "true build && true other" })).unwrap();
    assert_eq!(fixture.env.approval_requests().len(), 3);
    let decided_by: Vec<String> =
        fixture.env.decisions().iter().map(|(_, _, by)| by.to_string()).collect();
    assert_eq!(decided_by, ["user", "session-grant", "session-grant", "user", "user"]);
}

#[test]
fn under_never_the_refusal_is_decided_by_the_mode() {
    let fixture = fixture(Escalation::Never, ApprovalDecision::AllowForSession);
    fixture.call("run_command", json!({ "command": "true build" })).unwrap();
    assert_eq!(
        fixture.env.decisions(),
        [(vec!["escalate:true build".to_owned()], ApprovalDecision::Deny, DecidedBy::Mode)]
    );
    assert!(fixture.env.approval_requests().is_empty());
}
