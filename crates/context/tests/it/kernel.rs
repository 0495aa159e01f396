//! Through a real AgentLoop: a 5-step turn whose requests extend each other byte for byte (tool
//! outputs large enough to go to the blob store, inlined again by the resolver), and a turn the
//! `ContextWindowGuard` fails before any request is sent.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codecoder_context::{ContextBuilder, ContextWindowGuard};
use codecoder_kernel::{
    AgentConfig, AgentDeps, AllowAll, ModelClient, ModelError, ModelRequest, ResponseEvent,
    ResponseStream, Tool, ToolContext, ToolKind, ToolOutput, ToolRegistry, spawn_agent,
};
use codecoder_protocol::{
    AgentCommand, AgentEventKind, ContentItem, MessageItem, StopReason, ToolCallId, ToolError,
    TurnOutcome, UserInput,
};
use codecoder_session::{FsyncPolicy, SessionStore, WriterConfig};
use serde_json::{Value, json};

use crate::support::{Project, assert_prefix_stable};

const PATIENCE: Duration = Duration::from_secs(30);

/// Answers with scripted responses in order, keeping every request.
#[derive(Default)]
struct ScriptedModel {
    responses: Mutex<VecDeque<Vec<ResponseEvent>>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ModelClient for ScriptedModel {
    fn stream(&self, request: ModelRequest) -> Result<ResponseStream, ModelError> {
        self.requests.lock().unwrap().push(request);
        let events = self.responses.lock().unwrap().pop_front().unwrap_or_else(|| answer("(done)"));
        ResponseStream::spawn("model-script", 64, move |tx| {
            for event in events {
                if tx.send(event).is_err() {
                    return;
                }
            }
        })
        .map_err(|err| ModelError::new(err.to_string()))
    }
}

fn answer(text: &str) -> Vec<ResponseEvent> {
    vec![
        ResponseEvent::TextDelta(text.to_owned()),
        ResponseEvent::Completed { stop_reason: StopReason::EndTurn },
    ]
}

fn call(id: &str, path: &str) -> Vec<ResponseEvent> {
    let id = ToolCallId::new(id);
    vec![
        ResponseEvent::ToolCallStart { id: id.clone(), name: "read_file".to_owned() },
        ResponseEvent::ToolCallArgsDelta {
            id: id.clone(),
            delta: json!({ "path": path }).to_string(),
        },
        ResponseEvent::ToolCallDone { id },
        ResponseEvent::Completed { stop_reason: StopReason::ToolUse },
    ]
}

/// A read-only tool whose output is larger than the blob threshold.
struct ReadFile;

impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Reads a file."
    }
    fn schema(&self) -> Value {
        json!({ "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn execute(&self, _ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let path = args["path"].as_str().unwrap_or_default();
        Ok(ToolOutput::text(format!("// {path}\n{}", "fn parse() {}\n".repeat(400))))
    }
}

struct Run {
    outcome: TurnOutcome,
    requests: Vec<ModelRequest>,
}

/// Runs one turn of `prompt` on a fresh session in `project`'s home and shuts down.
fn run_turn(
    project: &Project,
    builder: Arc<ContextBuilder>,
    script: Vec<Vec<ResponseEvent>>,
    prompt: &str,
) -> Run {
    let model = Arc::new(ScriptedModel {
        responses: Mutex::new(script.into()),
        ..ScriptedModel::default()
    });
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(ReadFile)).unwrap();
    let guard = ContextWindowGuard::new(Arc::clone(&builder), "gpt-test", registry.specs());
    let store = SessionStore::new(project.home());
    let deps = AgentDeps {
        model: Arc::clone(&model) as Arc<dyn ModelClient>,
        prompt: builder,
        tools: Arc::new(registry),
        approval: Arc::new(AllowAll),
        hooks: Arc::new(codecoder_kernel::NoHooks),
        sessions: Arc::new(move |new| {
            let config = WriterConfig {
                fsync: FsyncPolicy::Never,
                blob_threshold: 1_024,
                ..WriterConfig::standard()
            };
            store.create(new, config)
        }),
        interceptors: vec![Arc::new(guard)],
        compactor: None,
        checkpoints: None,
    };
    let config =
        AgentConfig::standard("gpt-test", "scripted", project.repo().display().to_string());
    let handle = spawn_agent(config, deps).unwrap();
    handle.cmd.send(AgentCommand::Submit(UserInput::text(prompt))).unwrap();
    let outcome = loop {
        let event = handle.events.recv_timeout(PATIENCE).unwrap();
        if let AgentEventKind::TurnDone { outcome, .. } = event.kind {
            break outcome;
        }
    };
    handle.cmd.send(AgentCommand::Shutdown).unwrap();
    while let Ok(event) = handle.events.recv_timeout(PATIENCE) {
        if matches!(event.kind, AgentEventKind::ShutdownComplete) {
            break;
        }
    }
    handle.join().unwrap();
    let requests = model.requests.lock().unwrap().clone();
    Run { outcome, requests }
}

#[test]
fn a_five_step_turn_extends_its_prefix_byte_for_byte() {
    let project = Project::new();
    project.write("repo/AGENTS.md", "Run `cargo test` before you answer.");
    let blobs = SessionStore::new(project.home()).blobs();
    let resolved = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&resolved);
    let builder =
        project.builder(&project.repo(), &project.config()).with_blob_resolver(move |blob| {
            counter.fetch_add(1, Ordering::SeqCst);
            blobs.resolve(blob).ok()
        });
    let script = vec![
        call("call_1", "src/a.rs"),
        call("call_2", "src/b.rs"),
        call("call_3", "src/c.rs"),
        call("call_4", "src/d.rs"),
        answer("Fixed."),
    ];

    let run = run_turn(&project, Arc::new(builder), script, "Fix the parser.");

    assert_eq!(run.outcome, TurnOutcome::Completed);
    assert_eq!(run.requests.len(), 5);
    assert_prefix_stable(&run.requests);
    let last = &run.requests[4];
    assert!(last.instructions.contains("Run `cargo test` before you answer."));
    // The log moved each large output to the blob store; the model saw it whole.
    assert_eq!(resolved.load(Ordering::SeqCst), 4);
    let results: Vec<&ContentItem> = last
        .history
        .iter()
        .flat_map(|message| &message.items)
        .filter_map(|item| match item {
            MessageItem::ToolResult(result) => result.content.first(),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 4);
    for (result, path) in results.iter().zip(["src/a.rs", "src/b.rs", "src/c.rs", "src/d.rs"]) {
        let ContentItem::Text { text } = result else { panic!("not inlined: {result:?}") };
        assert_eq!(text, &format!("// {path}\n{}", "fn parse() {}\n".repeat(400)));
    }
}

#[test]
fn the_guard_fails_a_turn_that_cannot_fit() {
    let project = Project::new();
    let mut config = project.config();
    config.context_window = 3_000;
    config.max_output_tokens = 1_000;
    let builder = Arc::new(project.builder(&project.repo(), &config));

    let run = run_turn(&project, Arc::clone(&builder), Vec::new(), &" hello".repeat(2_000));

    let TurnOutcome::Failed { message } = &run.outcome else {
        panic!("the turn should fail: {:?}", run.outcome)
    };
    assert!(message.starts_with("the conversation needs ~"), "{message}");
    assert!(
        message.ends_with(&format!("gpt-test fits 3000 - 1000 = 2000; {}", crate::WINDOW_ADVICE)),
        "{message}"
    );
    assert!(run.requests.is_empty(), "nothing is sent when it cannot fit");

    // A prompt that fits goes through on the same builder.
    let run = run_turn(&project, builder, vec![answer("Hi.")], "Hello.");
    assert_eq!(run.outcome, TurnOutcome::Completed);
    assert_eq!(run.requests.len(), 1);
}
