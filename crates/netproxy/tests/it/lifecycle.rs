//! Stopping and bounds: dropping an endpoint or the proxy closes its listeners and connections,
//! joins its threads (none keeps the caller's `Decide` alive) and removes the socket files, also
//! while a request waits for an answer; the connection cap and the head timeout close clients.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;

use codecoder_netproxy::Decision;

use crate::support::{
    Answer, Client, Recorder, connect_request, echo_round_trip, echo_server, proxy, proxy_with,
    wait_until,
};

#[test]
fn dropping_the_proxy_ends_every_thread_and_connection_and_removes_the_sockets() {
    let echo = echo_server();
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy(&["echo.test"], &[], &[("echo.test", echo)], &recorder);
    let unix = handle.endpoint("cmd").unwrap();
    let tcp = handle.tcp_endpoint("web").unwrap();
    let path = unix.unix_path().unwrap().to_owned();
    let directory = path.parent().unwrap().to_owned();
    assert!(path.exists());
    let mut tunnel = Client::connect(&unix);
    let (head, _) = connect_request(&mut tunnel, "echo.test:443");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert_eq!(echo_round_trip(&mut tunnel, b"alive"), b"alive");
    // A connection that never sends its head.
    let _idle = Client::connect(&tcp);
    assert!(Arc::strong_count(&recorder) > 1);
    drop(handle);
    // Every thread held the proxy's core, and with it the recorder: all have been joined.
    assert_eq!(Arc::strong_count(&recorder), 1);
    assert!(!path.exists());
    assert!(!directory.exists());
    assert_eq!(tunnel.read_all(), "");
    // The endpoints outlive the proxy harmlessly.
    drop(unix);
    drop(tcp);
}

#[test]
fn dropping_an_endpoint_closes_it_and_its_connections_only() {
    let echo = echo_server();
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy(&["echo.test"], &[], &[("echo.test", echo)], &recorder);
    let first = handle.endpoint("first").unwrap();
    let second = handle.endpoint("second").unwrap();
    let first_path = first.unix_path().unwrap().to_owned();
    let mut on_first = Client::connect(&first);
    let mut on_second = Client::connect(&second);
    for client in [&mut on_first, &mut on_second] {
        let (head, _) = connect_request(client, "echo.test:443");
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    }
    drop(first);
    assert!(!first_path.exists());
    assert_eq!(on_first.read_all(), "");
    assert_eq!(echo_round_trip(&mut on_second, b"still here"), b"still here");
}

#[test]
fn dropping_the_proxy_while_a_request_waits_for_an_answer_ends_the_wait() {
    let recorder = Recorder::new(Answer::UntilStopped);
    let handle = proxy(&[], &[], &[], &recorder);
    let endpoint = handle.endpoint("cmd").unwrap();
    let mut client = Client::connect(&endpoint);
    let waiting = thread::spawn(move || {
        client.write_all_ok(b"CONNECT waiting.test:443 HTTP/1.1\r\nHost: waiting.test:443\r\n\r\n");
        client.read_all()
    });
    wait_until("the request waits for an answer", || handle.waiting_asks() == 1);
    drop(handle);
    let response = waiting.join().unwrap();
    // The stopped proxy answers the denial if it can, or closes.
    assert!(response.is_empty() || response.starts_with("HTTP/1.1 403 "), "{response}");
    assert_eq!(recorder.asks.load(Ordering::SeqCst), 1);
    assert_eq!(Arc::strong_count(&recorder), 1);
}

trait WriteAllOk {
    fn write_all_ok(&mut self, bytes: &[u8]);
}

impl WriteAllOk for Client {
    fn write_all_ok(&mut self, bytes: &[u8]) {
        std::io::Write::write_all(self, bytes).unwrap();
    }
}

#[test]
fn a_connection_over_the_cap_is_closed_unanswered() {
    let echo = echo_server();
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy_with(&["echo.test"], &[], &[("echo.test", echo)], &recorder, |config| {
        config.max_connections = 1;
    });
    let endpoint = handle.endpoint("cmd").unwrap();
    let mut first = Client::connect(&endpoint);
    let (head, _) = connect_request(&mut first, "echo.test:443");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let mut second = Client::connect(&endpoint);
    assert_eq!(second.read_all(), "");
    assert_eq!(echo_round_trip(&mut first, b"first"), b"first");
    // Once the first ends, its slot is free again.
    drop(first);
    wait_until("a new connection is served", || {
        let mut third = Client::connect(&endpoint);
        let mut response = [0_u8; 13];
        // A connection the proxy still turns away may be reset rather than closed.
        std::io::Write::write_all(&mut third, b"CONNECT echo.test:443 HTTP/1.1\r\n\r\n").is_ok()
            && std::io::Read::read_exact(&mut third, &mut response).is_ok()
            && response == *b"HTTP/1.1 200 "
    });
}

#[test]
fn a_client_that_sends_no_head_is_closed_after_the_head_timeout() {
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy_with(&[], &[], &[], &recorder, |config| {
        config.head_timeout = std::time::Duration::from_millis(50);
    });
    let endpoint = handle.endpoint("cmd").unwrap();
    let mut idle = Client::connect(&endpoint);
    assert_eq!(idle.read_all(), "");
    let mut partial = Client::connect(&endpoint);
    std::io::Write::write_all(&mut partial, b"CONNECT echo.test:443 HTTP/1.1\r\n").unwrap();
    assert!(partial.read_all().starts_with("HTTP/1.1 400 "));
    assert!(recorder.events().is_empty());
}

#[test]
fn a_start_sweeps_the_directories_of_dead_proxies_and_keeps_live_ones() {
    let parent = tempfile::tempdir().unwrap();
    let make = |name: &str| {
        let dir = parent.path().join(name);
        fs_err::create_dir(&dir).unwrap();
        dir
    };
    // Killed proxies: a dead socket with no pid file, and a pid file naming no process.
    let dead_socket = make("codecoder-net-dead1");
    drop(std::os::unix::net::UnixListener::bind(dead_socket.join("1.sock")).unwrap());
    let dead_pid = make("codecoder-net-dead2");
    fs_err::write(dead_pid.join("pid"), "2147483000").unwrap();
    // In use: a socket someone listens on, a running owner with no socket yet, an empty
    // directory still being set up, and a directory not named like a proxy's.
    let listening = make("codecoder-net-live1");
    let _listener = std::os::unix::net::UnixListener::bind(listening.join("1.sock")).unwrap();
    let running = make("codecoder-net-live2");
    fs_err::write(running.join("pid"), std::process::id().to_string()).unwrap();
    let fresh = make("codecoder-net-live3");
    // Left empty long ago by a proxy from before the pid file.
    let old_empty = make("codecoder-net-dead3");
    let hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 60 * 60);
    std::fs::File::open(&old_empty).unwrap().set_modified(hours_ago).unwrap();
    let other = make("other-dir");
    drop(std::os::unix::net::UnixListener::bind(other.join("1.sock")).unwrap());
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let first = proxy_with(&[], &[], &[], &recorder, |config| {
        config.socket_parent = parent.path().to_owned();
    });
    assert!(!dead_socket.exists() && !dead_pid.exists() && !old_empty.exists());
    for kept in [&listening, &running, &fresh, &other] {
        assert!(kept.exists(), "{} was removed", kept.display());
    }
    // A second proxy keeps the first's directory (its owner runs), with or without endpoints.
    let endpoint = first.endpoint("cmd").unwrap();
    let first_dir = endpoint.unix_path().unwrap().parent().unwrap().to_owned();
    let _second = proxy_with(&[], &[], &[], &recorder, |config| {
        config.socket_parent = parent.path().to_owned();
    });
    assert!(endpoint.unix_path().unwrap().exists());
    drop(endpoint);
    let _third = proxy_with(&[], &[], &[], &recorder, |config| {
        config.socket_parent = parent.path().to_owned();
    });
    assert!(first_dir.exists());
    drop(first);
    assert!(!first_dir.exists());
}
