//! Unit tests of the kernel's small parts: the schema validator, the cancel token, the response
//! stream's abort, the tool registry, the standard event channel's footprint.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_protocol::ToolError;
use crossbeam_channel::{after, select};
use serde_json::json;

use crate::{
    AgentConfig, CancelToken, Error, ResponseEvent, ResponseStream, Tool, ToolContext, ToolKind,
    ToolOutput, ToolRegistry, validate_schema,
};

#[test]
fn the_standard_event_channel_stays_small_for_an_idle_session() {
    // A bounded channel allocates and touches all its slots when it is made, and an idle
    // session keeps it: a server hosting many sessions pays it for each.
    let config = AgentConfig::standard("m", "p", "/");
    let slot = std::mem::size_of::<codecoder_protocol::AgentEvent>() + 8;
    let bytes = config.event_capacity * slot;
    assert!(bytes <= 256 * 1024, "{} slots of {slot} bytes: {bytes} bytes", config.event_capacity);
    assert!(config.event_capacity >= 64, "room for a front-end's short pause");
}

#[test]
fn schema_accepts_valid_arguments() {
    let schema = json!({
        "type": "object",
        "properties": {
            "path": { "type": "string", "minLength": 1 },
            "mode": { "enum": ["read", "write"] },
            "lines": { "type": "array", "items": { "type": "integer", "minimum": 1 }, "maxItems": 3 },
            "extra": { "type": ["string", "null"] }
        },
        "required": ["path"],
        "additionalProperties": false
    });
    assert_eq!(validate_schema(&schema, &json!({ "path": "a" })), Ok(()));
    assert_eq!(
        validate_schema(
            &schema,
            &json!({ "path": "a", "mode": "read", "lines": [1, 2], "extra": null })
        ),
        Ok(())
    );
    // Unknown keywords are ignored, so richer schemas never refuse a valid call.
    assert_eq!(validate_schema(&json!({ "type": "string", "format": "uri" }), &json!("x")), Ok(()));
    assert_eq!(validate_schema(&json!(true), &json!(42)), Ok(()));
}

#[test]
fn schema_errors_name_the_path() {
    let schema = json!({
        "type": "object",
        "properties": {
            "path": { "type": "string", "minLength": 1 },
            "mode": { "enum": ["read", "write"] },
            "lines": { "type": "array", "items": { "type": "integer", "minimum": 1 }, "maxItems": 3 }
        },
        "required": ["path"],
        "additionalProperties": false
    });
    let check = |value| validate_schema(&schema, &value).unwrap_err();
    assert_eq!(check(json!({})), "`args.path` is required");
    assert_eq!(check(json!("{\"path\"")), "`args` must be object, found string");
    assert_eq!(check(json!({ "path": 3 })), "`args.path` must be string, found number");
    assert_eq!(check(json!({ "path": "" })), "`args.path` needs at least 1 characters");
    assert_eq!(
        check(json!({ "path": "a", "mode": "x" })),
        "`args.mode` must be one of \"read\", \"write\", found \"x\""
    );
    assert_eq!(
        check(json!({ "path": "a", "lines": [1, 2.5] })),
        "`args.lines[1]` must be integer, found number"
    );
    assert_eq!(check(json!({ "path": "a", "lines": [0] })), "`args.lines[0]` must be at least 1");
    assert_eq!(
        check(json!({ "path": "a", "lines": [1, 1, 1, 1] })),
        "`args.lines` allows at most 3 items, found 4"
    );
    assert_eq!(
        check(json!({ "path": "a", "color": 1 })),
        "`args.color` is not a known property (known: lines, mode, path)"
    );
}

#[test]
fn cancel_token_wakes_a_select_and_stays_cancelled() {
    let token = CancelToken::new();
    let clone = token.clone();
    assert!(!token.is_cancelled());
    let waiter = std::thread::spawn(move || {
        let started = Instant::now();
        select! {
            recv(clone.signal()) -> _ => {}
            recv(after(Duration::from_secs(10))) -> _ => panic!("not woken"),
        }
        started.elapsed()
    });
    token.cancel();
    token.cancel();
    assert!(waiter.join().unwrap() < Duration::from_secs(5));
    assert!(token.is_cancelled());
    // A receiver looked at after the cancel is ready at once too.
    assert!(token.signal().recv().is_err());
}

#[test]
fn dropping_a_stream_aborts_and_joins_its_producer() {
    // The producer would send forever; dropping the stream makes its send fail.
    let (hook_tx, hook_rx) = crossbeam_channel::bounded(1);
    let stream = ResponseStream::spawn("test-producer", 4, |tx| {
        while tx.send(ResponseEvent::TextDelta("x".to_owned())).is_ok() {}
    })
    .unwrap()
    .with_abort(move || {
        let _ = hook_tx.send(());
    });
    assert_eq!(stream.events().recv().unwrap(), ResponseEvent::TextDelta("x".to_owned()));
    drop(stream);
    assert!(hook_rx.try_recv().is_ok(), "the abort hook ran");
}

struct Named(&'static str);

impl Tool for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "test"
    }
    fn schema(&self) -> serde_json::Value {
        json!({ "type": "object" })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn execute(
        &self,
        _ctx: &ToolContext,
        _args: serde_json::Value,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self.0))
    }
}

#[test]
fn registry_keeps_order_refuses_duplicates_and_filters() {
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(Named("b"))).unwrap();
    registry.register(Arc::new(Named("a"))).unwrap();
    assert!(
        matches!(registry.register(Arc::new(Named("a"))), Err(Error::DuplicateTool { name }) if name == "a")
    );
    let names: Vec<String> = registry.specs().into_iter().map(|spec| spec.name).collect();
    assert_eq!(names, ["b", "a"]);
    let only = registry.only(&["a".to_owned(), "zzz".to_owned()]);
    assert_eq!(only.tools().len(), 1);
    assert!(only.get("a").is_some() && only.get("b").is_none());
    registry.register(Arc::new(Named("mcp__gh__issues"))).unwrap();
    let only = registry.only(&["mcp__gh__*".to_owned(), "b".to_owned()]);
    let names: Vec<String> = only.specs().into_iter().map(|spec| spec.name).collect();
    assert_eq!(names, ["b", "mcp__gh__issues"]);
}

#[test]
fn pool_never_queues_a_job_behind_a_busy_worker_and_reuses_idle_ones() {
    let mut pool = crate::pool::WorkerPool::new();
    let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(0);
    let (done_tx, done_rx) = crossbeam_channel::bounded(8);
    // A job that blocks until released, like a tool ignoring cancel.
    pool.run(Box::new(move || {
        let _ = release_rx.recv();
    }))
    .unwrap();
    let tx = done_tx.clone();
    pool.run(Box::new(move || tx.send(2).unwrap())).unwrap();
    assert_eq!(done_rx.recv_timeout(Duration::from_secs(5)), Ok(2));
    assert_eq!(pool.len(), 2);
    // Wait until the second worker is back to idle (it counts itself idle after its job).
    let deadline = Instant::now() + Duration::from_secs(5);
    while pool.idle() == 0 && Instant::now() < deadline {
        std::thread::yield_now();
    }
    let tx = done_tx.clone();
    pool.run(Box::new(move || tx.send(3).unwrap())).unwrap();
    assert_eq!(done_rx.recv_timeout(Duration::from_secs(5)), Ok(3));
    assert_eq!(pool.len(), 2, "the idle worker was reused");
    drop(release_tx);
    // Dropping the pool joins both workers.
    drop(pool);
}

/// A hook source with fixed answers, for the stack's fold.
struct Fixed {
    pre: crate::PreToolUse,
    permission: Option<crate::PermissionAnswer>,
    prompt: crate::PromptSubmit,
    stop: crate::StopHook,
    asked: std::sync::Mutex<u32>,
}

impl Fixed {
    fn new() -> Self {
        Self {
            pre: crate::PreToolUse::default(),
            permission: None,
            prompt: crate::PromptSubmit::default(),
            stop: crate::StopHook::default(),
            asked: std::sync::Mutex::new(0),
        }
    }
}

impl crate::Hooks for Fixed {
    fn runs_inline(&self) -> bool {
        true
    }
    fn pre_tool_use(
        &self,
        _scope: crate::HookScope<'_>,
        _call: &codecoder_protocol::ToolCall,
    ) -> crate::PreToolUse {
        self.pre.clone()
    }
    fn permission_request(
        &self,
        _scope: crate::HookScope<'_>,
        _call: &codecoder_protocol::ToolCall,
    ) -> crate::PermissionHook {
        crate::PermissionHook { answer: self.permission.clone(), ..Default::default() }
    }
    fn user_prompt_submit(
        &self,
        _scope: crate::HookScope<'_>,
        _prompt: &str,
    ) -> crate::PromptSubmit {
        *self.asked.lock().unwrap() += 1;
        self.prompt.clone()
    }
    fn stop(&self, _scope: crate::HookScope<'_>, _active: bool, _last: &str) -> crate::StopHook {
        self.stop.clone()
    }
}

fn report(stop: Option<&str>, message: &str) -> crate::HookReport {
    crate::HookReport {
        stop: stop.map(str::to_owned),
        messages: vec![message.to_owned()],
        errors: Vec::new(),
    }
}

fn verdict(decision: codecoder_protocol::Verdict, reason: &str) -> Option<crate::HookVerdict> {
    Some(crate::HookVerdict { decision, reason: Some(reason.to_owned()) })
}

#[test]
fn a_hook_stack_folds_its_sources_answers_into_one() {
    use codecoder_protocol::{ApprovalDecision, ToolCall, ToolCallId, Verdict};

    use crate::{HookStack, Hooks};

    // Each source: its verdict, its rewrite (`n`), its permission answer and its stop text.
    let source = |decision, name: &str, n: u32, permission, interrupt, instruction: &str| {
        let mut source = Fixed::new();
        source.pre = crate::PreToolUse {
            verdict: verdict(decision, &format!("{name} says {decision}")),
            updated_args: Some(json!({ "n": n })),
            context: vec![name.to_owned()],
            report: report(Some(&format!("{name} stops")), &format!("from {name}")),
        };
        source.permission =
            Some(crate::PermissionAnswer { decision: permission, updated_args: None, interrupt });
        source.stop.instruction = Some(instruction.to_owned());
        source
    };
    let first = source(Verdict::Allow, "first", 1, ApprovalDecision::AllowOnce, false, "go on");
    let no = ApprovalDecision::DenyWithFeedback { feedback: "no".to_owned() };
    let second = source(Verdict::Ask, "second", 2, no, true, "and test");
    let mut third = Fixed::new();
    third.pre.verdict = verdict(Verdict::Allow, "third allows");
    let stack = HookStack(vec![Arc::new(first), Arc::new(second), Arc::new(third)]);
    assert!(stack.runs_inline());

    let token = CancelToken::new();
    let scope = crate::HookScope { depth: 0, agent_type: None, agent_id: None, cancel: &token };
    let call = ToolCall { id: ToolCallId::new("c"), name: "t".to_owned(), args: json!({}) };
    let pre = stack.pre_tool_use(scope, &call);
    assert_eq!(pre.verdict, verdict(Verdict::Ask, "second says ask"));
    assert_eq!(pre.updated_args, Some(json!({ "n": 1 })));
    assert_eq!(pre.context, ["first", "second"]);
    assert_eq!(pre.report.stop.as_deref(), Some("first stops"));
    assert_eq!(pre.report.messages, ["from first", "from second"]);
    let permission = stack.permission_request(scope, &call).answer.unwrap();
    assert_eq!(
        permission.decision,
        ApprovalDecision::DenyWithFeedback { feedback: "no".to_owned() }
    );
    assert!(permission.interrupt);
    assert_eq!(stack.stop(scope, false, "").instruction.as_deref(), Some("go on\nand test"));
}

#[test]
fn a_prompt_one_source_blocked_is_shown_to_no_later_one() {
    use crate::{HookStack, Hooks};

    let mut blocking = Fixed::new();
    blocking.prompt = crate::PromptSubmit {
        blocked: Some("secret".to_owned()),
        context: vec!["why".to_owned()],
        report: crate::HookReport::default(),
    };
    let later = Arc::new(Fixed::new());
    let stack = HookStack(vec![Arc::new(Fixed::new()), Arc::new(blocking), later.clone()]);
    let token = CancelToken::new();
    let scope = crate::HookScope { depth: 0, agent_type: None, agent_id: None, cancel: &token };
    let answer = stack.user_prompt_submit(scope, "my password");
    assert_eq!(answer.blocked.as_deref(), Some("secret"));
    assert_eq!(answer.context, ["why"]);
    assert_eq!(*later.asked.lock().unwrap(), 0);
}
