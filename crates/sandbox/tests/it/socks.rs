//! The stage binary's SOCKS5 connect mode (ssh's `ProxyCommand` for a proxied sandbox): it asks
//! the proxy `ALL_PROXY` names for the host and port it is given, by name, and relays its stdin
//! and stdout over the tunnel; a refusal is an error naming the host.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

const STAGE: &str = env!("CARGO_BIN_EXE_codecoder-sandbox-stage");

/// A stand-in SOCKS5 proxy serving one client: records the requested `host:port`, grants it
/// when `grant`, then echoes what it reads with a prefix.
fn socks_server(grant: bool) -> (u16, Arc<Mutex<Option<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let asked = Arc::new(Mutex::new(None));
    let record = Arc::clone(&asked);
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut greeting = [0_u8; 3];
        stream.read_exact(&mut greeting).unwrap();
        assert_eq!(greeting, [5, 1, 0]);
        stream.write_all(&[5, 0]).unwrap();
        let mut head = [0_u8; 5];
        stream.read_exact(&mut head).unwrap();
        assert_eq!(head[..4], [5, 1, 0, 3], "a CONNECT by name");
        let mut name = vec![0_u8; usize::from(head[4]) + 2];
        stream.read_exact(&mut name).unwrap();
        let port = u16::from_be_bytes([name[name.len() - 2], name[name.len() - 1]]);
        let host = String::from_utf8(name[..name.len() - 2].to_vec()).unwrap();
        *record.lock().unwrap() = Some(format!("{host}:{port}"));
        let status = if grant { 0 } else { 2 };
        stream.write_all(&[5, status, 0, 1, 127, 0, 0, 1, 0, 22]).unwrap();
        if !grant {
            return;
        }
        let mut received = Vec::new();
        stream.read_to_end(&mut received).unwrap();
        let mut reply = b"server got: ".to_vec();
        reply.extend_from_slice(&received);
        stream.write_all(&reply).unwrap();
    });
    (port, asked)
}

fn connect_mode(port: u16, stdin: &[u8]) -> std::process::Output {
    let mut child = Command::new(STAGE)
        .args([codecoder_sandbox::SOCKS_CONNECT_MARKER, "forge.test", "22"])
        .env_remove("all_proxy")
        .env("ALL_PROXY", format!("socks5h://127.0.0.1:{port}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_connect_mode_tunnels_stdin_and_stdout_through_the_socks5_proxy() {
    let (port, asked) = socks_server(true);
    let out = connect_mode(port, b"SSH-2.0-OpenSSH_9.6\r\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(asked.lock().unwrap().as_deref(), Some("forge.test:22"));
    assert_eq!(out.stdout, b"server got: SSH-2.0-OpenSSH_9.6\r\n");
}

#[test]
fn a_refused_connect_fails_naming_the_host() {
    let (port, _asked) = socks_server(false);
    let out = connect_mode(port, b"");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("forge.test:22") && stderr.contains("refused"), "{stderr}");
}

#[test]
fn git_ssh_command_quotes_the_executable_for_both_shells() {
    let command = codecoder_sandbox::git_ssh_command(std::path::Path::new("/opt/my tools/cc"));
    assert_eq!(
        command,
        r"ssh -o 'ProxyCommand='\''/opt/my tools/cc'\'' __codecoder-socks-connect %h %p'"
    );
    // What git's shell hands ssh: one option whose value is the proxy command as ssh's shell
    // will run it.
    let out = Command::new("sh")
        .args([
            "-c",
            &format!("set -- {}; printf '%s\\n' \"$2\"", command.trim_start_matches("ssh ")),
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "ProxyCommand='/opt/my tools/cc' __codecoder-socks-connect %h %p\n"
    );
}
