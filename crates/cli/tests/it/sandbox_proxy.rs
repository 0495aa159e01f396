//! `codecoder sandbox --network-proxy SOCKET [--network-proxy-tcp ADDRESS]` on both Linux
//! backends: the command reaches a stand-in proxy of the test's own (a unix socket, plus its
//! loopback TCP listener for Landlock) through the `http_proxy` it is given, and nothing else:
//! a direct connection to a loopback port of the host fails and never arrives.
#![cfg(target_os = "linux")]

use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::process::Command;

use crate::{stderr, stdout};

/// Answers each request (one per connection) with the request line it saw.
fn answer(stream: impl std::io::Read + std::io::Write + Send + 'static) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut first = String::new();
        let _ = reader.read_line(&mut first);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
        }
        let body = format!("stand-in saw: {}\n", first.trim_end());
        let mut stream = reader.into_inner();
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
}

fn through_the_proxy(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let workspace = root.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let socket = root.join("proxy.sock");
    let unix = UnixListener::bind(&socket).unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_address = tcp.local_addr().unwrap().to_string();
    // Serving until the test process ends.
    std::thread::spawn(move || unix.incoming().flatten().for_each(answer));
    std::thread::spawn(move || tcp.incoming().flatten().for_each(answer));
    let witness = TcpListener::bind("127.0.0.1:0").unwrap();
    witness.set_nonblocking(true).unwrap();
    let port = witness.local_addr().unwrap().port();

    let backend_arg = format!("sandbox.backend=\"{backend}\"");
    let script = format!(
        "curl -sS --max-time 10 http://registry.example/simple/ && \
         exec 3<>/dev/tcp/127.0.0.1/{port}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(["-c", &backend_arg, "-s", "workspace-write"])
        .args(["sandbox", "--network-proxy", socket.to_str().unwrap()])
        .args(["--network-proxy-tcp", &tcp_address, "--", "bash", "-c", &script])
        .current_dir(&workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root.join("home"))
        .env("CODECODER_HOME", root.join("cchome"))
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("stand-in saw: GET http://registry.example/simple/ HTTP/1.1"),
        "{backend}: {text}{}",
        stderr(&out)
    );
    // The direct connection is the script's last word, and fails.
    assert!(!out.status.success(), "{backend}: {text}{}", stderr(&out));
    assert!(witness.accept().is_err(), "{backend}: the host's port was reached");
}

#[test]
fn bwrap_reaches_only_the_proxy() {
    through_the_proxy("bwrap");
}

#[test]
fn landlock_reaches_only_the_proxy() {
    through_the_proxy("landlock");
}

/// The live processes whose `comm` is `name` and whose arguments include `arg`.
fn processes_named(name: &str, arg: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie =
            stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie
            && comm.trim_end() == name
            && cmdline.split(|byte| *byte == 0).any(|part| part == arg.as_bytes())
        {
            pids.push(pid);
        }
    }
    pids
}

fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    done()
}

/// kill -9 of codecoder while a proxied command runs leaves neither the command nor its relay.
fn kill_leaves_no_relay(backend: &str, marker: &str) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let workspace = root.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let socket = root.join("proxy.sock");
    let _unix = UnixListener::bind(&socket).unwrap();
    let socket_text = socket.to_str().unwrap().to_owned();
    let backend_arg = format!("sandbox.backend=\"{backend}\"");
    let mut codecoder = Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(["-c", &backend_arg, "-s", "workspace-write"])
        .args(["sandbox", "--network-proxy", &socket_text, "--", "sleep", marker])
        .current_dir(&workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root.join("home"))
        .env("CODECODER_HOME", root.join("cchome"))
        .spawn()
        .unwrap();
    let started = wait_until(|| {
        !processes_named("sleep", marker).is_empty()
            && !processes_named("codecoder-relay", &socket_text).is_empty()
    });
    assert!(started, "{backend}: the command or its relay never showed up");
    codecoder.kill().unwrap();
    codecoder.wait().unwrap();
    let gone = wait_until(|| {
        processes_named("sleep", marker).is_empty()
            && processes_named("codecoder-relay", &socket_text).is_empty()
    });
    assert!(
        gone,
        "{backend}: left after kill -9: command {:?}, relay {:?}",
        processes_named("sleep", marker),
        processes_named("codecoder-relay", &socket_text)
    );
}

#[test]
fn bwrap_kill_9_of_codecoder_leaves_no_relay() {
    kill_leaves_no_relay("bwrap", "4242.17");
}

#[test]
fn landlock_kill_9_of_codecoder_leaves_no_relay() {
    kill_leaves_no_relay("landlock", "4242.71");
}

/// Every proxy's socket lives under one directory per user, which a bubblewrap sandbox gets
/// empty: a command cannot reach another session's proxy (which may allow hosts its own does
/// not, or give a network to a session with none) — with the network off, and with a proxied
/// network of its own, whose socket alone is bound back.
#[test]
fn bwrap_hides_every_other_proxy_socket() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let workspace = root.join("workspace");
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let uid = String::from_utf8(Command::new("id").arg("-u").output().unwrap().stdout).unwrap();
    let sockets = tmp.join(format!("codecoder-proxy-{}", uid.trim()));
    std::fs::create_dir_all(sockets.join("codecoder-net-other")).unwrap();
    let other = sockets.join("codecoder-net-other/1.sock");
    let listener = UnixListener::bind(&other).unwrap();
    listener.set_nonblocking(true).unwrap();
    std::fs::create_dir_all(sockets.join("codecoder-net-own")).unwrap();
    let own = sockets.join("codecoder-net-own/1.sock");
    let own_listener = UnixListener::bind(&own).unwrap();
    std::thread::spawn(move || own_listener.incoming().flatten().for_each(answer));

    let script = format!(
        "ls -A {dir}; python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); \
         s.connect(sys.argv[1]); print(\"connected\")' {other}",
        dir = sockets.display(),
        other = other.display()
    );
    let run = |proxy: Option<&std::path::Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_codecoder"));
        command.args(["-c", "sandbox.backend=\"bwrap\"", "-s", "workspace-write", "sandbox"]);
        if let Some(proxy) = proxy {
            command.args(["--network-proxy", proxy.to_str().unwrap()]);
        }
        command
            .args(["--", "sh", "-c", &script])
            .current_dir(&workspace)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", root.join("home"))
            .env("TMPDIR", &tmp)
            .env("CODECODER_HOME", root.join("cchome"))
            .output()
            .unwrap()
    };
    for proxy in [None, Some(own.as_path())] {
        let out = run(proxy);
        let text = stdout(&out);
        assert!(!text.contains("connected"), "{proxy:?}: {text}{}", stderr(&out));
        assert!(!text.contains("codecoder-net-other"), "{proxy:?}: {text}{}", stderr(&out));
        assert!(listener.accept().is_err(), "{proxy:?}: the other proxy was reached");
        // The command's own socket is the one thing there.
        let own_listed = text.lines().any(|line| line == "codecoder-net-own");
        assert_eq!(own_listed, proxy.is_some(), "{proxy:?}: {text}{}", stderr(&out));
    }
    // Unconfined, the same script reaches it: the probe is real.
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert!(stdout(&out).contains("connected"), "{}{}", stdout(&out), stderr(&out));
}
