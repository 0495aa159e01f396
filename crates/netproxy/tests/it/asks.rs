//! Hosts no rule covers: the caller's `Decide` is asked once per host at a time, and answers for
//! the session are remembered.

use std::sync::atomic::Ordering;
use std::thread;

use codecoder_netproxy::{Decision, DecisionSource, Outcome};

use crate::support::{
    Answer, Client, Recorder, connect_request, echo_round_trip, echo_server, header, proxy,
    wait_until,
};

#[test]
fn concurrent_requests_for_a_host_share_one_ask() {
    let echo = echo_server();
    let (gate_tx, gate) = crossbeam_channel::bounded::<()>(0);
    let recorder = Recorder::new(Answer::Gated(Decision::AllowOnce, gate));
    let handle = proxy(&[], &[], &[("ask.test", echo)], &recorder);
    let endpoint = handle.endpoint("cmd-7").unwrap();
    let clients: Vec<_> = (0..2)
        .map(|n| {
            let mut client = Client::connect(&endpoint);
            thread::spawn(move || {
                let (head, _) = connect_request(&mut client, "ask.test:443");
                assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
                let message = format!("client {n}");
                assert_eq!(echo_round_trip(&mut client, message.as_bytes()), message.as_bytes());
            })
        })
        .collect();
    wait_until("both requests wait for the answer", || handle.waiting_asks() == 2);
    drop(gate_tx);
    for client in clients {
        client.join().unwrap();
    }
    assert_eq!(recorder.asks.load(Ordering::SeqCst), 1);
    assert_eq!(
        *recorder.asked.lock().unwrap(),
        vec![("ask.test".to_owned(), 443, "cmd-7".to_owned())]
    );
    let mut sources: Vec<_> = recorder
        .events()
        .into_iter()
        .map(|event| match event.outcome {
            Outcome::Allowed { source } => format!("{source:?}"),
            other => panic!("{other:?}"),
        })
        .collect();
    sources.sort();
    assert_eq!(sources, ["Joined(AllowOnce)", "User(AllowOnce)"]);
}

#[test]
fn an_answer_for_the_session_is_remembered_and_one_for_once_is_not() {
    let echo = echo_server();
    for (decision, asks, second_source) in [
        (Decision::AllowSession, 1, DecisionSource::Session),
        (Decision::AllowAlways, 1, DecisionSource::Session),
        (Decision::AllowOnce, 2, DecisionSource::User(Decision::AllowOnce)),
    ] {
        let recorder = Recorder::new(Answer::Now(decision));
        let handle = proxy(&[], &[], &[("ask.test", echo)], &recorder);
        let endpoint = handle.endpoint("cmd").unwrap();
        for _ in 0..2 {
            let mut client = Client::connect(&endpoint);
            let (head, _) = connect_request(&mut client, "ask.test:443");
            assert!(head.starts_with("HTTP/1.1 200 "), "{decision:?}: {head}");
        }
        assert_eq!(recorder.asks.load(Ordering::SeqCst), asks, "{decision:?}");
        assert_eq!(
            recorder.events()[1].outcome,
            Outcome::Allowed { source: second_source },
            "{decision:?}"
        );
    }
}

#[test]
fn a_declined_host_gets_a_403_saying_it_was_not_approved() {
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy(&[], &[], &[], &recorder);
    let endpoint = handle.endpoint("cmd").unwrap();
    for _ in 0..2 {
        let mut client = Client::connect(&endpoint);
        let (head, _) = connect_request(&mut client, "unknown.test:443");
        assert!(head.starts_with("HTTP/1.1 403 "), "{head}");
        assert_eq!(
            header(&head, "x-codecoder-network").as_deref(),
            Some("blocked; unknown.test is not in allowed_domains and access was not approved")
        );
    }
    // A denial is not remembered: the next request asks again.
    assert_eq!(recorder.asks.load(Ordering::SeqCst), 2);
}

#[test]
fn a_panicking_decide_denies_and_the_proxy_goes_on() {
    let recorder = Recorder::new(Answer::Panic);
    let handle = proxy(&[], &[], &[], &recorder);
    let endpoint = handle.endpoint("cmd").unwrap();
    for _ in 0..2 {
        let mut client = Client::connect(&endpoint);
        let (head, _) = connect_request(&mut client, "unknown.test:443");
        assert!(head.starts_with("HTTP/1.1 403 "), "{head}");
    }
    assert_eq!(recorder.asks.load(Ordering::SeqCst), 2);
    assert_eq!(
        recorder.events()[0].outcome,
        Outcome::Denied {
            source: DecisionSource::User(Decision::Deny),
            reason: codecoder_netproxy::DenyReason::Declined {
                host: codecoder_netproxy::Host::Name("unknown.test".to_owned()),
            },
        }
    );
}
