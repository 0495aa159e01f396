//! What a provider's server says about its models: `codecoder models` lists them (from the
//! server for local providers, from the catalog for cloud presets), and a session takes its
//! context window from the server when config.toml does not set one.

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::{Value, json};

use crate::exec::Run;
use crate::local::LocalHome;
use crate::{stderr, stdout};

fn llama_cpp(n_ctx: u64) -> Script {
    Script::new()
        .discovery("/props", json!({"default_generation_settings": {"n_ctx": n_ctx}}))
        .discovery(
            "/v1/models",
            json!({"object": "list", "data": [
                {"id": "smollm2", "object": "model", "meta": {"n_ctx_train": 8192}}
            ]}),
        )
}

#[test]
fn models_lists_what_a_local_server_serves_with_its_running_window() {
    let server = FakeModelServer::start(llama_cpp(4096)).unwrap();
    let local = LocalHome::new(&server.base_url(), "smollm2", "");
    let run = local.run();

    let out = run.run(&["models"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let url = format!("{}/v1/models", server.base_url());
    assert!(
        text.starts_with(&format!("models of provider `local` (local), from {url}:\n")),
        "{text}"
    );
    assert!(text.contains("* smollm2  context 4096\n"), "{text}");
    assert!(text.contains("* the configured model"), "{text}");

    let out = run.run(&["models", "--provider", "local", "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(listed["provider"], "local");
    assert_eq!(listed["source"], url.as_str());
    assert_eq!(
        listed["models"],
        json!([{"id": "smollm2", "context_window": 4096, "default": true}])
    );
    assert!(server.requests().is_empty(), "no model request was sent");
}

#[test]
fn models_asks_ollama_through_its_own_api() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new()
        .discovery(
            "/api/tags",
            json!({"models": [{"name": "llama3.2:latest"}, {"name": "qwen2.5-coder:7b"}]}),
        )
        .discovery(
            "/api/show",
            json!({"parameters": "num_ctx 8192", "model_info": {"general.architecture": "llama", "llama.context_length": 131072}}),
        );
    let server = FakeModelServer::start(script).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "model = \"llama3.2:latest\"\nmodel_provider = \"ollama\"\n[model_providers.ollama]\nbase_url = \"{}/v1\"\n[models.\"qwen2.5-coder:7b\"]\ncontext_window = 32768\n",
            server.base_url()
        ),
    )
    .unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: Vec::new() };
    let out = run.run(&["models", "--provider", "ollama"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("from {}/api/tags:", server.base_url())), "{text}");
    assert!(text.contains("* llama3.2:latest   context 8192\n"), "{text}");
    assert!(text.contains("  qwen2.5-coder:7b  context 32768\n"), "configured: {text}");
}

#[test]
fn models_of_a_cloud_preset_come_from_the_catalog_without_a_request() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(llama_cpp(4096)).unwrap();
    let env = vec![
        ("ANTHROPIC_BASE_URL".to_owned(), server.base_url()),
        ("ANTHROPIC_API_KEY".to_owned(), "sk-test".to_owned()),
    ];
    let run = Run { home: home.path(), cwd: cwd.path(), env };
    let out = run.run(&["models", "--provider", "anthropic"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("from the catalog"), "{text}");
    assert!(text.contains("claude-sonnet-4-6"), "{text}");
    assert!(!text.contains("gpt-5"), "{text}");
    assert!(server.discovery_requests().is_empty() && server.requests().is_empty());
}

#[test]
fn models_names_a_server_that_is_not_running_and_an_unknown_provider() {
    let addr = FakeModelServer::start(Script::new()).unwrap().addr();
    let local = LocalHome::new(&format!("http://{addr}"), "m", "");
    let run = local.run();
    let out = run.run(&["models"], "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "could not list the models of provider `local` at http://{addr}/v1/models"
        )),
        "{err}"
    );
    assert!(err.contains("is the server running?"), "{err}");

    let out = run.run(&["models", "--provider", "nowhere"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("unknown provider `nowhere`") && err.contains("ollama, lmstudio, local"),
        "{err}"
    );
}

/// A 24 000-byte file whose last line is a marker: whole under a 32k-token window, cut under a
/// 20k one (no tool output may take more than a quarter of the window).
fn read_big_file(server_window: Option<u64>) -> (String, String, usize) {
    let mut text = "a line of the big file, long enough to count\n".repeat(530);
    text.push_str("THE-LAST-LINE\n");
    let script = Script::new()
        .reply(Reply::tool_call("call_1", "read_file", json!({"path": "big.txt"})))
        .reply(Reply::text("Read it."));
    let script = match server_window {
        Some(n_ctx) => {
            script.discovery("/props", json!({"default_generation_settings": {"n_ctx": n_ctx}}))
        }
        None => script,
    };
    let server = FakeModelServer::start(script).unwrap();
    let local = LocalHome::new(&server.base_url(), "fake-local-model", "");
    std::fs::write(local.cwd.path().join("big.txt"), &text).unwrap();
    let run = local.run();
    let out = run.run(&["exec", "read big.txt"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Read it.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let tool = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    (tool, stderr(&out), server.discovery_requests().len())
}

#[test]
fn exec_takes_its_window_from_the_server() {
    let (tool, err, asked) = read_big_file(Some(20_000));
    assert!(asked >= 1);
    assert!(!tool.contains("THE-LAST-LINE"), "cut at a quarter of the 20k window");
    assert!(tool.len() <= 21_000, "{}", tool.len());
    assert!(!err.contains("not in the catalog"), "{err}");
}

#[test]
fn a_server_that_says_nothing_leaves_the_default_window() {
    let (tool, err, asked) = read_big_file(None);
    assert!(asked >= 1, "asked, and answered 404");
    assert!(tool.contains("THE-LAST-LINE"), "whole under the unknown model's 32k window");
    assert!(err.contains("assuming a 32768-token context"), "{err}");
}

#[test]
fn a_profile_sets_the_window_of_a_local_model() {
    let server = FakeModelServer::start(llama_cpp(4096)).unwrap();
    let local = LocalHome::new(
        &server.base_url(),
        "smollm2",
        "[profiles.big]\nmodel_context_window = 16384\n",
    );
    let run = local.run();
    let out = run.run(&["models"], "");
    assert!(stdout(&out).contains("* smollm2  context 4096\n"), "{}", stdout(&out));
    let out = run.run(&["--profile", "big", "models"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("* smollm2  context 16384\n"), "{}", stdout(&out));
}

#[test]
fn models_says_what_to_set_when_the_server_reports_no_window() {
    // llama-cpp-python's way: no /props, no window on /v1/models, the GGUF's path as the id.
    let server = FakeModelServer::start(Script::new().discovery(
        "/v1/models",
        json!({"object": "list", "data": [{"id": "/models/smollm2.gguf", "object": "model"}]}),
    ))
    .unwrap();
    let local = LocalHome::new(&server.base_url(), "/models/smollm2.gguf", "");
    let run = local.run();
    let out = run.run(&["models"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("* /models/smollm2.gguf  context unknown\n"), "{text}");
    assert!(text.contains("set model_context_window"), "{text}");
    // Once set, the window is known and the hint goes.
    let out = run.run(&["-c", "model_context_window=8192", "models"], "");
    let text = stdout(&out);
    assert!(text.contains("* /models/smollm2.gguf  context 8192\n"), "{text}");
    assert!(!text.contains("set model_context_window"), "{text}");
}
