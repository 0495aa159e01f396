//! `--remote`'s pieces on their own: the URL and where the token comes from, events read back
//! from their JSON, and the stream against a small fake server on loopback (a broken
//! connection resumed from the cursor, an approval answered through the API, one answered
//! elsewhere first, a close that ends the session).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, ApprovalDecision, ApprovalRequest, CallView,
    EventSource, Reply, RequestId, SessionId, StepId, ToolCall, ToolCallId, TurnId,
};
use crossbeam_channel::{Receiver, Sender};
use serde_json::{Value, json};
use tungstenite::Message;

use crate::remote::client::{Client, ServerUrl};
use crate::remote::{find_token, query_escape, replayed, stream};

fn url(text: &str) -> ServerUrl {
    ServerUrl::parse(text).unwrap()
}

#[test]
fn the_url_is_the_servers_address_alone() {
    assert_eq!(url("http://127.0.0.1:8123"), ServerUrl { host: "127.0.0.1".into(), port: 8123 });
    assert_eq!(url("http://LOCALHOST:8123/"), ServerUrl { host: "localhost".into(), port: 8123 });
    assert_eq!(url("http://[::1]:9"), ServerUrl { host: "[::1]".into(), port: 9 });
    let token = ServerUrl::parse("http://127.0.0.1:8123/?token=abc").unwrap_err();
    assert!(token.contains("does not go on the command line"), "{token}");
    for bad in
        ["https://127.0.0.1:8123", "http://127.0.0.1", "http://[::1]", "http://h:0", "127.0.0.1:80"]
    {
        assert!(ServerUrl::parse(bad).is_err(), "{bad}");
    }
    assert!(ServerUrl::parse("http://127.0.0.1:8123/api/server").is_err());
}

#[test]
fn loopback_names_reach_the_same_server() {
    assert!(url("http://localhost:8123").same_server(&url("http://127.0.0.1:8123")));
    assert!(url("http://[::1]:8123").same_server(&url("http://127.0.0.1:8123")));
    assert!(!url("http://127.0.0.1:8124").same_server(&url("http://127.0.0.1:8123")));
    assert!(!url("http://box.lan:8123").same_server(&url("http://127.0.0.1:8123")));
    assert!(url("http://box.lan:8123").same_server(&url("http://box.lan:8123")));
    assert!(url("http://127.0.0.1:1").is_loopback());
    assert!(!url("http://10.0.0.2:1").is_loopback());
}

#[test]
fn the_token_comes_from_serve_json_for_that_server_else_from_the_variable() {
    let home = tempfile::tempdir().unwrap();
    let written = json!({
        "url": "http://127.0.0.1:8123/?token=from-file",
        "token": "from-file",
        "pid": 1,
        "listen": "127.0.0.1:8123",
    });
    fs_err::write(home.path().join("serve.json"), written.to_string()).unwrap();
    let none = |_: &str| None;
    let set = |name: &str| (name == "MY_TOKEN").then(|| "from-env".to_owned());

    let (token, source) =
        find_token(&url("http://localhost:8123"), Some(home.path()), "MY_TOKEN", &set).unwrap();
    assert_eq!(token, "from-file");
    assert!(source.contains("serve.json"), "{source}");

    let other = url("http://127.0.0.1:9999");
    let (token, source) = find_token(&other, Some(home.path()), "MY_TOKEN", &set).unwrap();
    assert_eq!((token.as_str(), source.as_str()), ("from-env", "the token in $MY_TOKEN"));

    let err = find_token(&other, Some(home.path()), "MY_TOKEN", &none).unwrap_err();
    assert!(err.contains("is for another server (http://127.0.0.1:8123/)"), "{err}");
    assert!(err.contains("$MY_TOKEN is not set"), "{err}");
    assert!(!err.contains("from-file"), "the other server's token is not shown: {err}");

    let empty = tempfile::tempdir().unwrap();
    let err = find_token(&other, Some(empty.path()), "MY_TOKEN", &none).unwrap_err();
    assert!(err.contains("does not exist"), "{err}");
}

#[test]
fn query_values_are_escaped() {
    assert_eq!(query_escape("/home/a b/ü&x=1"), "/home/a%20b/%C3%BC%26x%3D1");
}

fn approval_event(session_id: SessionId) -> AgentEvent {
    let call = ToolCall {
        id: ToolCallId::new("call_1"),
        name: "run_command".into(),
        args: json!({"command": "ls"}),
    };
    let view = CallView {
        title: "Run `ls`".into(),
        command: Some("ls".into()),
        paths: vec!["src".into()],
        ..CallView::default()
    };
    let (reply, _) = Reply::pair();
    AgentEvent {
        source: EventSource { session_id, subagent_path: Vec::new() },
        kind: AgentEventKind::ApprovalRequest(ApprovalRequest {
            id: RequestId::new(),
            turn: TurnId::new(1),
            step: StepId::FIRST,
            call,
            view,
            summary: "run `ls`".into(),
            permission_keys: vec!["shell:ls".into()],
            reason: Some("ask — default".into()),
            reply,
        }),
    }
}

/// What the server sends is what the client reads back: the same JSON again.
#[test]
fn agent_events_read_back_from_their_json() {
    let session_id = SessionId::new();
    let event = approval_event(session_id);
    let sent = serde_json::to_value(&event).unwrap();
    let read: AgentEvent = serde_json::from_value(sent.clone()).unwrap();
    assert_eq!(serde_json::to_value(&read).unwrap(), sent);
    let AgentEventKind::ApprovalRequest(request) = read.kind else { panic!("{sent}") };
    assert_eq!(request.view.command.as_deref(), Some("ls"));
    assert!(!request.reply.send(ApprovalDecision::AllowOnce), "a read reply waits on nothing");

    let user = replayed(
        json!({"seq": 3, "user": {"content": [{"type": "text", "text": "hi"}]}}),
        session_id,
    )
    .unwrap();
    assert_eq!(user.seq, 3);
    let event = replayed(json!({"seq": 4, "event": sent}), session_id).unwrap();
    assert!(matches!(event.event, codecoder_app::history::HistoryEvent::Agent(_)));
}

/// What the fake server saw.
enum Seen {
    /// A WebSocket upgrade for this path and query.
    Stream(String),
    /// A `POST` to this path with this body.
    Post(String, Value),
}

/// A fake `codecoder serve` on loopback: each event-stream connection gets the next script of
/// items (then is broken off, or closed with a close frame), each POST the status the test
/// gives for its path.
struct FakeServe {
    port: u16,
    seen: Receiver<Seen>,
    _thread: std::thread::JoinHandle<()>,
}

/// One event-stream connection: the items to send, then how it ends.
struct Connection {
    items: Vec<Value>,
    /// `true`: a close frame; `false`: the connection breaks (dropped without one).
    close: bool,
    /// Wait for a POST before ending (so its answer can come first).
    wait_for_post: bool,
}

fn fake_serve(connections: Vec<Connection>, post_status: fn(&str) -> u16) -> FakeServe {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (seen_tx, seen) = crossbeam_channel::unbounded();
    let (posted_tx, posted_rx) = crossbeam_channel::unbounded::<()>();
    let thread = std::thread::spawn(move || {
        let mut connections = connections.into_iter();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut head = [0u8; 4];
            if stream.peek(&mut head).is_err() {
                return;
            }
            // Each connection on a thread of its own: a stream waits for a POST meanwhile.
            let seen_tx = seen_tx.clone();
            if &head == b"POST" {
                let posted_tx = posted_tx.clone();
                std::thread::spawn(move || answer_post(stream, &seen_tx, &posted_tx, post_status));
                continue;
            }
            let Some(connection) = connections.next() else { return };
            let posted_rx = posted_rx.clone();
            std::thread::spawn(move || serve_stream(stream, connection, &seen_tx, &posted_rx));
        }
    });
    FakeServe { port, seen, _thread: thread }
}

fn answer_post(
    stream: TcpStream,
    seen: &Sender<Seen>,
    posted: &Sender<()>,
    status: fn(&str) -> u16,
) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let path = line.split(' ').nth(1).unwrap().to_owned();
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let code = status(&path);
    seen.send(Seen::Post(path, serde_json::from_slice(&body).unwrap())).unwrap();
    let answer = if code == 200 { r#"{"ok":true}"# } else { r#"{"error":"answered already"}"# };
    let mut stream = reader.into_inner();
    write!(
        stream,
        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{answer}",
        answer.len()
    )
    .unwrap();
    posted.send(()).unwrap();
}

fn serve_stream(
    stream: TcpStream,
    connection: Connection,
    seen: &Sender<Seen>,
    posted: &Receiver<()>,
) {
    let mut target = String::new();
    #[allow(clippy::result_large_err)] // The signature tungstenite asks for.
    let callback = |request: &tungstenite::handshake::server::Request,
                    response: tungstenite::handshake::server::Response| {
        target = request.uri().to_string();
        Ok(response)
    };
    let mut socket = tungstenite::accept_hdr(stream, callback).unwrap();
    seen.send(Seen::Stream(target)).unwrap();
    for item in connection.items {
        socket.send(Message::text(item.to_string())).unwrap();
    }
    if connection.wait_for_post {
        posted.recv_timeout(Duration::from_secs(20)).unwrap();
    }
    if connection.close {
        let _ = socket.close(None);
        let _ = socket.flush();
        // Until the client's answering close frame, so the close is seen before the drop.
        while socket.read().is_ok() {}
    }
}

fn client(port: u16) -> Arc<Client> {
    let url = ServerUrl { host: "127.0.0.1".into(), port };
    Arc::new(Client::new(url, "secret".into(), "a test token".into()))
}

fn record(seq: u64, session: &str, event: &AgentEvent) -> Value {
    json!({ "seq": seq, "sessionId": session, "event": event })
}

fn next(events: &Receiver<AgentEvent>) -> AgentEventKind {
    events.recv_timeout(Duration::from_secs(20)).unwrap().kind
}

/// A broken connection is opened again after the last `seq` seen, and an item seen before is
/// not passed on twice; the UI's answer to an approval is posted to the API; a close frame
/// ends the stream, and the handle's channel with it.
#[test]
fn the_stream_resumes_from_its_cursor_and_answers_go_to_the_api() {
    let session_id = SessionId::new();
    let session = session_id.to_string();
    let source = EventSource { session_id, subagent_path: Vec::new() };
    let warning = |text: &str| AgentEvent {
        source: source.clone(),
        kind: AgentEventKind::Warning { message: text.into() },
    };
    let approval = approval_event(session_id);
    let AgentEventKind::ApprovalRequest(request) = &approval.kind else { unreachable!() };
    let request_id = request.id.to_string();
    let server = fake_serve(
        vec![
            Connection {
                items: vec![record(1, &session, &warning("one")), record(2, &session, &approval)],
                close: false,
                wait_for_post: true,
            },
            Connection {
                items: vec![record(2, &session, &approval), record(3, &session, &warning("three"))],
                close: true,
                wait_for_post: false,
            },
        ],
        |_| 200,
    );
    let handle =
        stream::attach(client(server.port), &session, Arc::default(), false, None).unwrap();
    assert_eq!(handle.session_id(), session_id);
    let first_stream = format!("/api/sessions/{session}/events?after=0");
    assert!(matches!(server.seen.recv().unwrap(), Seen::Stream(t) if t.ends_with(&first_stream)));
    assert!(
        matches!(next(&handle.events), AgentEventKind::Warning { message } if message == "one")
    );
    let AgentEventKind::ApprovalRequest(request) = next(&handle.events) else { panic!() };
    assert!(request.reply.send(ApprovalDecision::AllowForSession));
    let Seen::Post(path, body) = server.seen.recv().unwrap() else { panic!("no answer posted") };
    assert_eq!(path, format!("/api/approvals/{request_id}"));
    assert_eq!(body, json!({"decision": {"type": "allow_for_session"}}));
    assert!(
        matches!(server.seen.recv().unwrap(), Seen::Stream(t) if t.ends_with("events?after=2"))
    );
    assert!(
        matches!(next(&handle.events), AgentEventKind::Warning { message } if message == "three")
    );
    let AgentEventKind::Warning { message } = next(&handle.events) else { panic!() };
    assert!(message.contains("closed the session's event stream"), "{message}");
    assert!(handle.events.recv_timeout(Duration::from_secs(20)).is_err(), "the channel closed");
    // The UI keeps a command sender of its own and joins the handle when its events close.
    let ui_cmd = handle.cmd.clone();
    handle.join().unwrap();
    assert!(ui_cmd.send(AgentCommand::Cancel).is_err(), "nothing takes commands any more");
}

/// An approval another client answered first is let go with a note, and the UI's own late
/// answer that the server refuses (409) is a note too, never a hang; `Shutdown` ends with
/// `ShutdownComplete` and leaves the session in the server.
#[test]
fn an_answer_from_elsewhere_wins_and_shutdown_detaches() {
    let session_id = SessionId::new();
    let session = session_id.to_string();
    let first = approval_event(session_id);
    let second = approval_event(session_id);
    let id_of = |event: &AgentEvent| match &event.kind {
        AgentEventKind::ApprovalRequest(request) => request.id.to_string(),
        _ => unreachable!(),
    };
    let resolved = json!({
        "seq": 2,
        "sessionId": session,
        "approvalResolved": { "id": id_of(&first), "decision": { "type": "deny" } },
    });
    let server = fake_serve(
        vec![Connection {
            items: vec![record(1, &session, &first), resolved, record(3, &session, &second)],
            close: false,
            wait_for_post: true,
        }],
        |_| 409,
    );
    let handle =
        stream::attach(client(server.port), &session, Arc::default(), false, None).unwrap();
    let AgentEventKind::ApprovalRequest(first) = next(&handle.events) else { panic!() };
    // The note comes from the session thread, the next request from the reader: either first.
    let (mut note, mut second) = (None, None);
    while note.is_none() || second.is_none() {
        match next(&handle.events) {
            AgentEventKind::Warning { message } => note = Some(message),
            AgentEventKind::ApprovalRequest(request) => second = Some(request),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(note.unwrap(), "another client answered first: deny");
    assert!(!first.reply.send(ApprovalDecision::AllowOnce), "nothing waits on it any more");
    let second = second.unwrap();
    assert!(second.reply.send(ApprovalDecision::AllowOnce));
    let AgentEventKind::Warning { message } = next(&handle.events) else { panic!() };
    assert!(message.contains("another client answered first"), "{message}");
    handle.cmd.send(AgentCommand::Shutdown).unwrap();
    assert!(matches!(next(&handle.events), AgentEventKind::ShutdownComplete));
    handle.join().unwrap();
    // Only the one answer was posted: no close or cancel of the session.
    let posts = server.seen.try_iter().filter(|seen| matches!(seen, Seen::Post(..))).count();
    assert_eq!(posts, 1);
}

#[test]
fn a_prompt_this_client_sent_is_known_by_its_echo_and_others_are_not() {
    let followed = stream::Followed::default();
    followed.sent().push_back("first".to_owned());
    followed.sent().push_back("/review src".to_owned());
    assert!(!followed.is_own_echo("from elsewhere"), "another client's prompt is shown");
    assert!(followed.is_own_echo("first"));
    // A slash command comes back expanded.
    assert!(followed.is_own_echo("Review the code in src carefully."));
    assert!(!followed.is_own_echo("first"), "each sent prompt is matched once");
}
