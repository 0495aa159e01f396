//! Unit tests of the managed network's notes and command summaries.

use super::{denial_note, short};

#[test]
fn no_denial_no_note() {
    assert_eq!(denial_note(&[], true), None);
}

#[test]
fn a_note_names_each_refused_host_and_what_to_do() {
    let denials = vec![
        ("evil.test:443".to_owned(), "evil.test is denied (denied_domains: evil.test)".to_owned()),
        ("10.0.0.1:80".to_owned(), "10.0.0.1 is a bare IP address".to_owned()),
    ];
    let asked = denial_note(&denials, true).unwrap_or_default();
    assert!(asked.contains("evil.test:443 (evil.test is denied"), "{asked}");
    assert!(asked.contains("10.0.0.1:80"), "{asked}");
    assert!(asked.contains("Do not retry"), "{asked}");
    let never = denial_note(&denials, false).unwrap_or_default();
    assert!(never.contains("allowed_domains"), "{never}");
    assert!(never.contains("ask the user"), "{never}");
}

#[test]
fn a_host_the_users_config_denies_is_not_to_be_asked_for() {
    let denials = vec![(
        "evil.test:443".to_owned(),
        "evil.test is denied (denied_domains: *.test)".to_owned(),
    )];
    for asked in [true, false] {
        let note = denial_note(&denials, asked).unwrap_or_default();
        assert!(note.contains("denied by the user's config"), "{note}");
        assert!(note.contains("denied_domains: *.test"), "{note}");
        assert!(note.contains("do not retry"), "{note}");
        assert!(!note.contains("ask the user"), "{note}");
        assert!(!note.contains("add it to `allowed_domains`"), "{note}");
    }
}

#[test]
fn short_keeps_the_first_line_within_80_characters() {
    assert_eq!(short("curl https://x.test"), "curl https://x.test");
    assert_eq!(short("curl a\ncurl b"), "curl a…");
    let long = "é".repeat(100);
    assert_eq!(short(&long), format!("{}…", "é".repeat(80)));
}

fn sandbox(network: bool) -> codecoder_sandbox::Confinement {
    let policy = codecoder_sandbox::SandboxPolicy {
        access: codecoder_sandbox::FsAccess::WorkspaceWrite,
        writable_roots: vec![std::env::temp_dir()],
        network,
        network_proxy: None,
        hidden_paths: Vec::new(),
        protected_paths: Vec::new(),
    };
    let sandbox = codecoder_sandbox::Sandbox::new(
        policy,
        codecoder_sandbox::Backend::Landlock,
        std::path::PathBuf::from("/bin/true"),
    );
    codecoder_sandbox::Confinement::Sandboxed(std::sync::Arc::new(sandbox))
}

fn managed() -> std::sync::Arc<super::ManagedNetwork> {
    let policy = codecoder_netproxy::NetworkPolicy::new(&[], &[], &[]).unwrap();
    super::ManagedNetwork::new(codecoder_netproxy::ProxyConfig::standard(policy))
}

#[test]
fn only_a_sandboxed_command_without_network_is_proxied() {
    let network = managed();
    let unconfined = codecoder_sandbox::Confinement::Unconfined;
    assert!(network.confine(&unconfined, "a", "true", None, false).unwrap().is_none());
    assert!(network.confine(&sandbox(true), "b", "true", None, false).unwrap().is_none());
    assert!(!network.is_started(), "nothing needed the proxy yet");
    let command = network.confine(&sandbox(false), "c", "true", None, false).unwrap().unwrap();
    assert!(network.is_started());
    let codecoder_sandbox::Confinement::Sandboxed(proxied) = command.confinement() else {
        panic!("not sandboxed: {command:?}");
    };
    let proxy = proxied.policy().network_proxy.clone().unwrap();
    assert!(proxy.socket.exists(), "{proxy:?}");
    assert!(proxy.tcp.is_some_and(|address| address.ip().is_loopback()), "{proxy:?}");
    assert!(!proxied.policy().network);
    // The endpoints and the command's asker go with it.
    drop(command);
    assert!(!proxy.socket.exists(), "{proxy:?}");
    assert!(network.askers.lock().is_empty());
}

#[test]
fn a_refused_host_is_in_the_command_s_note() {
    use std::io::{Read as _, Write as _};
    let network = managed();
    let command = network.confine(&sandbox(false), "c", "curl", None, false).unwrap().unwrap();
    let codecoder_sandbox::Confinement::Sandboxed(proxied) = command.confinement() else {
        panic!("not sandboxed");
    };
    let address = proxied.policy().network_proxy.as_ref().unwrap().tcp.unwrap();
    // Nobody to ask (no approver): an unlisted host is refused, and the note says so.
    let mut client = std::net::TcpStream::connect(address).unwrap();
    client.write_all(b"GET http://unlisted.test/ HTTP/1.1\r\nHost: unlisted.test\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = client.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    let note = command.note().unwrap_or_default();
    assert!(note.contains("unlisted.test:80 (unlisted.test is not in allowed_domains"), "{note}");
    assert!(note.contains("ask the user"), "{note}");
}
