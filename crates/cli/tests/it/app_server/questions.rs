//! `codecoder app-server` end to end: the model's questions to a client that opted into the
//! experimental API (answered, declined, withdrawn) and to one that did not (not asked, and the
//! model hears why).

use super::*;

/// The model asks with `ask_user` three times: once answered, once refused, once interrupted.
fn question_script() -> Script {
    let ask = |id: &str| {
        Reply::tool_call(
            id,
            "ask_user",
            json!({"question": "Which color should the button be?", "options": ["red", "blue"]}),
        )
    };
    Script::new()
        .reply(ask("q1"))
        .reply(Reply::text("Blue it is."))
        .reply(ask("q2"))
        .reply(Reply::text("I will pick myself."))
        .reply(ask("q3"))
        // Only reached if the interrupt loses a race with the next request; cut off then.
        .reply(Reply::text("too late").delay_ms(3000))
}

#[test]
fn a_client_that_opts_in_answers_the_models_question() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(question_script()).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let mut client = Client::start(&run);
    let result = client.result(
        "initialize",
        json!({
            "clientInfo": {"name": "test-client", "version": "1.0"},
            "capabilities": {"experimentalApi": true}
        }),
    );
    assert!(result["userAgent"].as_str().unwrap().starts_with("codecoder/"), "{result}");
    client.send(&json!({"method": "initialized"}));

    // 1. The question reaches the client on the ask_user call's item; its answer is the
    // tool's result.
    let (thread_id, turn_id) = client.start_turn(cwd.path(), "style the button");
    let (before, request) = client.until("item/tool/requestUserInput");
    let params = &request["params"];
    assert_eq!(params["threadId"], thread_id.as_str(), "{request}");
    assert_eq!(params["turnId"], turn_id.as_str(), "{request}");
    assert_eq!(params["isBlocking"], true, "{request}");
    let item = with_method(&before, "item/started")
        .into_iter()
        .map(|m| &m["params"]["item"])
        .find(|item| item["tool"] == "ask_user")
        .unwrap_or_else(|| panic!("no ask_user item before the question: {before:#?}"))
        .clone();
    assert_eq!(params["itemId"], item["id"], "{request}");
    let questions = params["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 1, "{request}");
    let question = &questions[0];
    assert_eq!(question["question"], "Which color should the button be?");
    assert_eq!(
        question["options"],
        json!([{"label": "red", "description": ""}, {"label": "blue", "description": ""}])
    );
    assert_eq!(question["isOther"], true, "the person may answer freely: {question}");
    assert_eq!(question["isSecret"], false);
    let question_id = question["id"].as_str().unwrap().to_owned();
    client.send(&json!({
        "id": request["id"],
        "result": {"answers": {question_id: {"answers": ["blue"]}}}
    }));
    let messages = client.turn(|_| "decline");
    assert_eq!(messages.last().unwrap()["params"]["turn"]["status"], "completed");
    assert_eq!(
        with_method(&messages, "serverRequest/resolved")[0]["params"],
        json!({"threadId": thread_id, "requestId": request["id"]})
    );
    let done = with_method(&messages, "item/completed")
        .into_iter()
        .map(|m| &m["params"]["item"])
        .find(|i| i["id"] == item["id"])
        .unwrap()
        .clone();
    assert_eq!(done["status"], "completed", "{done}");
    let body = server.requests()[1].raw_body.clone();
    assert!(body.contains("The user answered: blue"), "{body}");

    // 2. The client answers with an error: the question is declined and the turn goes on.
    client.next_turn(&thread_id, "again");
    let (_, request) = client.until("item/tool/requestUserInput");
    client.send(&json!({
        "id": request["id"],
        "error": {"code": -32601, "message": "no questions today"}
    }));
    let messages = client.turn(|_| "decline");
    assert_eq!(messages.last().unwrap()["params"]["turn"]["status"], "completed");
    let body = server.requests()[3].raw_body.clone();
    assert!(body.contains("The user declined to answer"), "{body}");

    // 3. The turn is interrupted while the question is open: it ends, the request is withdrawn,
    // and a late answer changes nothing.
    let turn_id = client.next_turn(&thread_id, "once more");
    let (_, request) = client.until("item/tool/requestUserInput");
    client.result("turn/interrupt", json!({"threadId": thread_id, "turnId": turn_id}));
    let messages = client.turn(|_| "decline");
    let completed = messages.last().unwrap();
    assert_eq!(completed["params"]["turn"]["status"], "interrupted", "{completed}");
    assert!(
        with_method(&messages, "serverRequest/resolved")
            .iter()
            .any(|m| m["params"]["requestId"] == request["id"]),
        "{messages:#?}"
    );
    client.send(&json!({"id": request["id"], "result": {"answers": {}}}));
    let threads = client.result("thread/list", json!({}));
    assert!(threads["data"].is_array(), "{threads}");
    assert_eq!(server.requests().len(), 5, "the interrupted turn asked the model nothing more");
    client.check_against_codex();
    assert!(client.finish().success());
}

#[test]
fn a_client_without_the_experimental_api_is_not_asked_and_the_model_hears_why() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(question_script()).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let mut client = Client::start(&run);
    client.initialize();
    client.start_turn(cwd.path(), "style the button");
    let messages = client.turn(|_| "decline");
    assert!(!methods(&messages).contains(&"item/tool/requestUserInput"), "{messages:#?}");
    assert_eq!(messages.last().unwrap()["params"]["turn"]["status"], "completed");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the turn went on after the question");
    let body = &requests[1].raw_body;
    assert!(body.contains("The question could not be asked"), "{body}");
    assert!(body.contains("does not take questions"), "{body}");
    assert!(!body.contains("The user declined"), "{body}");
    client.check_against_codex();
    assert!(client.finish().success());
}
