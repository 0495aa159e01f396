//! A local server that cannot stream tool calls, and one that is not running, end to end: the
//! real binary against the fake model server in a temporary home. The first run falls back to
//! an unstreamed request, warns once and remembers it in the home's provider cache; the next
//! run sends unstreamed from its first request (no failed attempt, no warning); `stream = true`
//! tries streaming first again; `doctor` shows what is remembered. A server that is not running
//! is named with what to do. A request the server refuses as larger than its context makes the
//! turn compact the conversation and send it again.

use codecoder_test_support::{FakeModelServer, Fault, Reply, Script};

use crate::local::LocalHome;
use crate::{stderr, stdout};

/// A home whose `local` provider, "Local server", serves `local-model` at `base_url`.
fn local_home(base_url: &str) -> LocalHome {
    LocalHome::new(base_url, "local-model", "name = \"Local server\"\n")
}

fn streams(server: &FakeModelServer) -> Vec<bool> {
    server.requests().iter().map(|r| r.body["stream"].as_bool().unwrap()).collect()
}

#[test]
fn the_first_run_falls_back_and_warns_once_the_next_pays_no_failed_attempt() {
    // llama-cpp-python's way: the streamed request with tools ends before any finish reason.
    let server = FakeModelServer::start(
        Script::new()
            .when_streamed_tools(Reply::text("never sent").end_after(1))
            .reply(Reply::text("First answer."))
            .reply(Reply::text("Second answer."))
            .reply(Reply::text("Third answer.")),
    )
    .unwrap();
    let local = local_home(&server.base_url());
    let (home, run) = (&local.home, local.run());

    let out = run.run(&["exec", "hi"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "First answer.\n");
    let err = stderr(&out);
    assert_eq!(err.matches("cannot stream tool calls").count(), 1, "{err}");
    let cache = home.path().join("cache").join("providers.json");
    assert!(err.contains(&cache.display().to_string()), "the warning says where: {err}");
    assert!(err.contains("stream = false in [model_providers.local]"), "{err}");
    assert_eq!(streams(&server), [true, false]);
    let remembered: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert_eq!(
        remembered["unstreamed_tools"],
        serde_json::json!([{
            "provider": "local",
            "base_url": format!("{}/v1", server.base_url()),
            "model": "local-model",
        }])
    );

    let out = run.run(&["doctor"], "");
    assert!(
        stdout(&out).contains(&format!(
            "provider cache: requests with tools go unstreamed to local ({}/v1), model local-model",
            server.base_url()
        )),
        "{}",
        stdout(&out)
    );

    let out = run.run(&["exec", "again"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Second answer.\n");
    let err = stderr(&out);
    assert!(!err.contains("cannot stream"), "no warning the second time: {err}");
    assert_eq!(streams(&server), [true, false, false], "no failed attempt the second time");

    // `stream = true` set by the person tries streaming first whatever the cache says.
    let out = run.run(&["-c", "model_providers.local.stream=true", "exec", "stream please"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Third answer.\n");
    assert_eq!(streams(&server), [true, false, false, true, false]);
}

#[test]
fn a_server_that_is_not_running_is_named_with_what_to_do() {
    // A loopback port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base_url = format!("http://127.0.0.1:{port}");
    let local = local_home(&base_url);
    let run = local.run();
    let out = run.run(&["exec", "hi"], "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "cannot reach Local server at {base_url}/v1 (connection refused): is the server running? start it, or set base_url in [model_providers.local]"
        )),
        "{err}"
    );
    assert_eq!(err.matches("cannot reach").count(), 1, "said once: {err}");
}

#[test]
fn a_context_overflow_compacts_the_conversation_and_the_turn_goes_on() {
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("call_1", "list_dir", serde_json::json!({"path": "."})))
            .reply(
                Fault::status(400)
                    .error_type("exceed_context_size_error")
                    .message("the request exceeds the available context size, try increasing it"),
            )
            .reply(Reply::text("The summary of it all."))
            .reply(Reply::text("Answered after compacting.")),
    )
    .unwrap();
    let local = local_home(&server.base_url());
    let run = local.run();
    let out = run.run(&["exec", "a long task"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Answered after compacting.\n");
    let err = stderr(&out);
    assert!(err.contains("does not fit the context of model `local-model`"), "{err}");
    assert!(err.contains("compacting the conversation and sending it again"), "{err}");
    let requests = server.requests();
    let offers_tools: Vec<bool> = requests
        .iter()
        .map(|r| r.body["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect();
    assert_eq!(
        offers_tools,
        [true, true, false, true],
        "a call, the step that overflows, the summary, the step again"
    );
    let again = requests[3].body["messages"].to_string();
    assert!(again.contains("The summary of it all."), "{again}");
    let log = local.session_log();
    let out = run.run(&["sessions", "validate", log.to_str().unwrap()], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}
