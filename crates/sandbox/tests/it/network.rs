//! A proxied network, on each Linux backend: a command reaches a stand-in proxy (a unix socket,
//! and a loopback TCP listener for the Landlock backend, served by this test) through the
//! `http_proxy` it is given, with curl, both as plain HTTP and through a CONNECT tunnel; every
//! other way out fails and leaves no trace: a direct connection to a loopback port of the host,
//! to the host's own address, a UDP datagram (a DNS query), an abstract unix socket of the host.
//! The same probes run unconfined succeed, so the suite proves the sandbox, not broken probes.
//! Killing the command, or the bubblewrap around it, leaves no relay behind.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codecoder_sandbox::{
    CommandSpec, Confinement, FsAccess, NetworkProxy, Outcome, Sandbox, SandboxPolicy, SpawnConfig,
    Wait, spawn,
};
use tempfile::TempDir;

use crate::escape::{sandboxed, wait_until};

/// The confinement for `backend`: `bwrap`, `landlock` (with its namespaces: the relay in a
/// network namespace of its own, where the machine allows one) or `landlock-port` (without
/// namespaces: a connect to the proxy's TCP port only). `None` when skipped.
fn confine(backend: &str, policy: SandboxPolicy) -> Option<Confinement> {
    let (name, namespaces) = match backend {
        "landlock-port" => ("landlock", false),
        other => (other, true),
    };
    let confinement = sandboxed(name, policy)?;
    if namespaces {
        return Some(confinement);
    }
    let Confinement::Sandboxed(sandbox) = confinement else { unreachable!() };
    let plain = Sandbox::new(
        sandbox.policy().clone(),
        sandbox.backend().clone(),
        sandbox.stage_exe().to_owned(),
    )
    .without_namespaces();
    Some(Confinement::Sandboxed(Arc::new(plain)))
}

/// The stand-in proxy: answers `CONNECT host:port` with `200` and then serves one request inside
/// the tunnel, and answers a plain proxied `GET` itself; each reply names what it was asked. It
/// records every request line.
struct StandIn {
    socket: PathBuf,
    tcp: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
}

impl StandIn {
    fn start(dir: &Path) -> StandIn {
        let socket = dir.join("proxy.sock");
        let unix = UnixListener::bind(&socket).unwrap();
        let tcp = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let address = tcp.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        // Detached: the listeners live as long as the test process; nothing waits for them.
        std::thread::spawn(move || {
            for stream in unix.incoming().flatten() {
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || serve_proxy(stream.try_clone().unwrap(), stream, &seen));
            }
        });
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in tcp.incoming().flatten() {
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || serve_proxy(stream.try_clone().unwrap(), stream, &seen));
            }
        });
        StandIn { socket, tcp: address, requests }
    }

    fn proxy(&self) -> NetworkProxy {
        NetworkProxy { socket: self.socket.clone(), tcp: Some(self.tcp) }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// Reads one request head; returns its first line.
fn read_head(reader: &mut impl BufRead) -> Option<String> {
    let mut first = String::new();
    reader.read_line(&mut first).ok()?;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 || line == "\r\n" {
            break;
        }
    }
    Some(first.trim_end().to_owned())
}

fn serve_proxy(read: impl Read, mut write: impl Write, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(read);
    let Some(first) = read_head(&mut reader) else { return };
    seen.lock().unwrap().push(first.clone());
    let reply = |write: &mut dyn Write, body: &str| {
        let _ = write!(
            write,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    };
    if let Some(target) = first.strip_prefix("CONNECT ") {
        let target = target.split(' ').next().unwrap_or_default().to_owned();
        let _ = write.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
        let Some(inner) = read_head(&mut reader) else { return };
        reply(&mut write, &format!("tunnel to {target}: {inner}\n"));
    } else {
        reply(&mut write, &format!("stand-in: {first}\n"));
    }
}

struct Fixture {
    base: TempDir,
    stand_in: StandIn,
}

impl Fixture {
    fn new() -> Self {
        let base = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(base.path().join("ws")).unwrap();
        let stand_in = StandIn::start(base.path());
        Fixture { base, stand_in }
    }

    fn policy(&self) -> SandboxPolicy {
        SandboxPolicy {
            access: FsAccess::WorkspaceWrite,
            writable_roots: vec![self.base.path().join("ws")],
            network: false,
            network_proxy: Some(self.stand_in.proxy()),
            protected_paths: Vec::new(),
            hidden_paths: Vec::new(),
        }
    }

    /// Runs `script` with `bash -c` in the workspace; `env` on top of this process's own.
    fn run(&self, confinement: &Confinement, script: &str, env: &[(&str, String)]) -> Run {
        let mut spec = CommandSpec::new("bash", ["-c", script]);
        spec.cwd = Some(self.base.path().join("ws"));
        spec.env = env.iter().map(|(name, value)| ((*name).into(), value.into())).collect();
        let config = SpawnConfig { confinement: confinement.clone(), ..SpawnConfig::standard() };
        let mut child = spawn(&spec, &config).unwrap();
        let mut output = Vec::new();
        let outcome = child.wait(&Wait::new(), &mut |chunk| output.extend_from_slice(&chunk.bytes));
        let Outcome::Exited(status) = outcome.unwrap() else { panic!("stopped") };
        Run { code: status.code(), output: String::from_utf8_lossy(&output).into_owned() }
    }
}

#[derive(Debug)]
struct Run {
    code: Option<i32>,
    output: String,
}

/// curl, which every probe through the proxy uses; the suite fails without it rather than
/// proving nothing.
fn require_curl() {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|dir| dir.join("curl").is_file());
    assert!(found, "these tests need curl on PATH");
}

/// The proxied requests work: plain HTTP (the proxy sees the absolute URL) and a CONNECT tunnel,
/// with the address and variables the sandbox set.
fn reaches_the_proxy(backend: &str) {
    require_curl();
    let fixture = Fixture::new();
    let Some(confinement) = confine(backend, fixture.policy()) else { return };
    let run = fixture.run(
        &confinement,
        "echo \"proxy=$HTTPS_PROXY all=$all_proxy no=$NO_PROXY\"; \
         curl -sS --max-time 10 http://registry.example.test/simple/ && \
         curl -sS --max-time 10 -p http://forge.example.test:8080/repo.git/info/refs",
        // A proxy of the user's own in the command's environment gives way to the sandbox's.
        &[("http_proxy", "http://192.0.2.1:9".to_owned()), ("NO_PROXY", "*".to_owned())],
    );
    assert_eq!(run.code, Some(0), "{backend}: {run:?}");
    let relay = format!("127.0.0.1:{}", codecoder_sandbox::RELAY_PORT);
    let expected_address = match backend {
        "bwrap" => relay,
        "landlock-port" => fixture.stand_in.tcp.to_string(),
        // Where the machine refuses the namespaces, the port rule instead.
        _ if run.output.contains(&relay) => relay,
        _ => fixture.stand_in.tcp.to_string(),
    };
    assert!(
        run.output.contains(&format!(
            "proxy=http://{expected_address} all=socks5h://{expected_address} no=localhost,127.0.0.1,::1"
        )),
        "{backend}: {run:?}"
    );
    assert!(
        run.output.contains("stand-in: GET http://registry.example.test/simple/ HTTP/1.1"),
        "{backend}: {run:?}"
    );
    assert!(
        run.output.contains("tunnel to forge.example.test:8080: GET /repo.git/info/refs HTTP/1.1"),
        "{backend}: {run:?}"
    );
    let requests = fixture.stand_in.requests();
    assert!(requests.iter().any(|line| line.starts_with("CONNECT forge.example.test:8080 ")));
}

#[test]
fn bwrap_reaches_the_proxy() {
    reaches_the_proxy("bwrap");
}

#[test]
fn landlock_reaches_the_proxy() {
    reaches_the_proxy("landlock");
}

#[test]
fn landlock_without_namespaces_reaches_the_proxy() {
    reaches_the_proxy("landlock-port");
}

/// One way around the proxy: a script, and whether something outside saw it.
struct Probe {
    name: &'static str,
    script: String,
    trace: Box<dyn Fn() -> bool>,
}

/// A listener of the host that records whether anyone connected.
fn tcp_witness(address: SocketAddr) -> (u16, Box<dyn Fn() -> bool>) {
    let listener = TcpListener::bind(address).unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    (port, Box::new(move || listener.accept().is_ok()))
}

/// The host's own non-loopback IPv4 address, when it has one (the source address of a route
/// to a public address; no packet is sent).
fn host_address() -> Option<Ipv4Addr> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    socket.connect((Ipv4Addr::new(192, 0, 2, 1), 9)).ok()?;
    match socket.local_addr().ok()?.ip() {
        std::net::IpAddr::V4(ip) if !ip.is_loopback() && !ip.is_unspecified() => Some(ip),
        _ => None,
    }
}

fn probes() -> Vec<Probe> {
    let mut probes = Vec::new();
    let (port, trace) = tcp_witness((Ipv4Addr::LOCALHOST, 0).into());
    probes.push(Probe {
        name: "direct connect to a loopback port",
        script: format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo hi >&3"),
        trace,
    });
    let (port, trace) = tcp_witness((Ipv4Addr::LOCALHOST, 0).into());
    probes.push(Probe {
        name: "curl past the proxy",
        // The witness never answers: a connection that got through ends in curl's timeout (28).
        script: format!(
            "curl -sS --max-time 1 --noproxy '*' http://127.0.0.1:{port}/; test $? -eq 28"
        ),
        trace,
    });
    match host_address() {
        Some(ip) => {
            let (port, trace) = tcp_witness((ip, 0).into());
            probes.push(Probe {
                name: "direct connect to the host's address",
                script: format!("exec 3<>/dev/tcp/{ip}/{port} && echo hi >&3"),
                trace,
            });
        }
        None => eprintln!("no non-loopback address here: the raw-IP probe is left out"),
    }
    let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    udp.set_nonblocking(true).unwrap();
    let port = udp.local_addr().unwrap().port();
    probes.push(Probe {
        name: "UDP datagram (a DNS query to a local resolver)",
        // A DNS query for example.com, as a resolver would send it.
        script: format!(
            "printf '\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01' > /dev/udp/127.0.0.1/{port}"
        ),
        trace: Box::new(move || udp.recv(&mut [0; 512]).is_ok()),
    });
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name =
        format!("codecoder-test-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let abstract_listener = UnixListener::bind_addr(&address).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    probes.push(Probe {
        name: "abstract unix socket of the host",
        script: format!(
            "perl -MSocket -e 'socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die \"socket: $!\"; \
             connect($s, pack_sockaddr_un(\"\\0{name}\")) or die \"connect: $!\"; print \"connected\\n\"'"
        ),
        trace: Box::new(move || abstract_listener.accept().is_ok()),
    });
    probes
}

/// Runs every probe; returns `(name, succeeded, trace, output)` for each.
fn run_probes(
    fixture: &Fixture,
    confinement: &Confinement,
    env: &[(&str, String)],
) -> Vec<(&'static str, bool, bool, String)> {
    let mut results = Vec::new();
    for probe in probes() {
        let run = fixture.run(confinement, &probe.script, env);
        // A datagram or connection that got out is queued by the time the command ended.
        let trace = (probe.trace)();
        results.push((probe.name, run.code == Some(0), trace, run.output));
    }
    results
}

fn blocks_every_way_around(backend: &str) {
    require_curl();
    let fixture = Fixture::new();
    let Some(confinement) = confine(backend, fixture.policy()) else { return };
    let results = run_probes(&fixture, &confinement, &[]);
    let escaped: Vec<_> =
        results.iter().filter(|(_, succeeded, trace, _)| *succeeded || *trace).collect();
    if std::env::var_os("ESCAPE_VERBOSE").is_some() {
        eprintln!("{backend}: {results:#?}");
    }
    assert!(escaped.is_empty(), "{backend}: these probes got through: {escaped:#?}");
    assert!(results.len() >= 4, "{backend}: only {} probes ran", results.len());
}

#[test]
fn bwrap_blocks_every_way_around_the_proxy() {
    blocks_every_way_around("bwrap");
}

#[test]
fn landlock_blocks_every_way_around_the_proxy() {
    blocks_every_way_around("landlock");
}

#[test]
fn landlock_without_namespaces_blocks_every_way_around_the_proxy() {
    blocks_every_way_around("landlock-port");
}

#[test]
fn the_same_probes_succeed_unconfined() {
    require_curl();
    let fixture = Fixture::new();
    let results = run_probes(&fixture, &Confinement::Unconfined, &[]);
    let failed: Vec<_> =
        results.iter().filter(|(_, succeeded, trace, _)| !*succeeded || !*trace).collect();
    assert!(failed.is_empty(), "these probes do not work even unconfined: {failed:#?}");
}

/// The live processes whose arguments satisfy `matches`.
fn processes(matches: impl Fn(&[&[u8]]) -> bool) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in fs_err::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = fs_err::read(entry.path().join("cmdline")) else { continue };
        let Ok(stat) = fs_err::read_to_string(entry.path().join("stat")) else { continue };
        let zombie =
            stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        let args: Vec<&[u8]> =
            cmdline.split(|byte| *byte == 0).filter(|arg| !arg.is_empty()).collect();
        if !zombie && matches(&args) {
            pids.push(pid);
        }
    }
    pids
}

/// The relays for `socket`: processes named `codecoder-relay`, forks of the stage that keep its
/// command line, which names the socket after `--relay`.
fn relays_of(socket: &Path) -> Vec<u32> {
    let socket = socket.to_str().unwrap().as_bytes();
    processes(|args| {
        args.get(1) == Some(&codecoder_sandbox::STAGE_MARKER.as_bytes())
            && args.windows(2).any(|pair| pair[0] == b"--relay" && pair[1] == socket)
    })
    .into_iter()
    .filter(|pid| {
        fs_err::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|name| name.trim_end() == "codecoder-relay")
    })
    .collect()
}

/// The processes whose command line is exactly `sleep MARKER`.
fn sleeps(marker: &str) -> Vec<u32> {
    processes(|args| args.len() == 2 && args[0] == b"sleep" && args[1] == marker.as_bytes())
}

/// kill -9 of the command (the relay's parent under bubblewrap) ends the relay; kill -9 of the
/// wrapper the spawner started (bubblewrap, or the Landlock stage waiting for the command) ends
/// both.
fn relay_ends_with_the_command(backend: &str) {
    let fixture = Fixture::new();
    let Some(confinement) = confine(backend, fixture.policy()) else { return };
    let socket = &fixture.stand_in.socket;
    for victim in ["command", "bwrap"] {
        let marker = match (backend, victim) {
            ("bwrap", "command") => "3141.5",
            ("bwrap", _) => "2718.2",
            (_, "command") => "1414.2",
            _ => "1732.0",
        };
        let mut spec = CommandSpec::new("sleep", [marker]);
        spec.cwd = Some(fixture.base.path().join("ws"));
        let config = SpawnConfig { confinement: confinement.clone(), ..SpawnConfig::standard() };
        let child = spawn(&spec, &config).unwrap();
        let started = wait_until(Duration::from_secs(10), || {
            !sleeps(marker).is_empty() && !relays_of(socket).is_empty()
        });
        assert!(started, "{backend}: the command or its relay never showed up");
        let relays = relays_of(socket);
        assert_eq!(relays.len(), 1, "{backend}: {relays:?}");
        let target = match victim {
            "command" => sleeps(marker)[0],
            _ => child.pid(),
        };
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(target).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let gone = wait_until(Duration::from_secs(5), || {
            relays_of(socket).is_empty() && sleeps(marker).is_empty()
        });
        assert!(
            gone,
            "{backend}: after kill -9 of the {victim}: relay {:?} left",
            relays_of(socket)
        );
        drop(child);
    }
}

#[test]
fn bwrap_relay_ends_with_the_command() {
    relay_ends_with_the_command("bwrap");
}

#[test]
fn landlock_relay_ends_with_the_command() {
    relay_ends_with_the_command("landlock");
}

/// A relay whose proxy socket is gone closes each connection; the command sees an error, not a
/// hang.
#[test]
fn bwrap_without_the_proxy_fails_fast() {
    require_curl();
    let fixture = Fixture::new();
    let mut policy = fixture.policy();
    policy.network_proxy =
        Some(NetworkProxy { socket: fixture.base.path().join("gone.sock"), tcp: None });
    let Some(confinement) = sandboxed("bwrap", policy) else { return };
    let run = fixture.run(&confinement, "curl -sS --max-time 20 http://example.test/", &[]);
    assert_ne!(run.code, Some(0), "{run:?}");
    // Connected to the relay, then closed: curl's "empty reply" (52) or a receive error (56).
    assert!(matches!(run.code, Some(52 | 56)), "{run:?}");
}

/// Under Landlock without namespaces and without the proxy's TCP address, the network is
/// simply off.
#[test]
fn landlock_without_namespaces_or_a_tcp_listener_is_offline() {
    let fixture = Fixture::new();
    let mut policy = fixture.policy();
    policy.network_proxy =
        Some(NetworkProxy { socket: fixture.stand_in.socket.clone(), tcp: None });
    let Some(confinement) = confine("landlock-port", policy) else { return };
    let port = fixture.stand_in.tcp.port();
    let run = fixture.run(
        &confinement,
        &format!(
            "echo \"disabled=$CODECODER_SANDBOX_NETWORK_DISABLED proxy=${{http_proxy-unset}}\"; \
             exec 3<>/dev/tcp/127.0.0.1/{port}"
        ),
        &[],
    );
    assert_ne!(run.code, Some(0), "{run:?}");
    assert!(run.output.contains("disabled=1 proxy=unset"), "{run:?}");
    // The unix socket itself stays reachable, as every unix socket does with the network off.
    let _ = UnixStream::connect(&fixture.stand_in.socket).unwrap();
}

/// `doctor` (the probe's notes) says what a proxied network is under each backend, and what the
/// Landlock fallback leaves open.
#[test]
fn probe_says_what_a_proxied_network_covers() {
    let notes = codecoder_sandbox::probe(codecoder_sandbox::BackendPreference::Auto).notes;
    let about = |prefix: &str| {
        notes.iter().any(|note| note.starts_with(prefix) && note.contains("a proxied network"))
    };
    let found =
        |name| notes.iter().any(|note: &String| note.starts_with(name) && !note.contains("not"));
    if found("bwrap: /") {
        assert!(about("bwrap: "), "{notes:?}");
    }
    if found("landlock: ABI") {
        assert!(about("landlock: "), "{notes:?}");
        let landlock =
            notes.iter().find(|note| note.starts_with("landlock: a proxied network")).unwrap();
        assert!(landlock.contains("on any address") || landlock.contains("is off"), "{landlock}");
    }
}

/// A command on a terminal (an `exec_command` session) gets the same proxied network: the stage
/// starts the relay before it takes the terminal, and the relay keeps none of it.
fn on_a_terminal(backend: &str) {
    require_curl();
    let fixture = Fixture::new();
    let Some(confinement) = confine(backend, fixture.policy()) else { return };
    let mut spec = CommandSpec::new(
        "bash",
        ["-c", "tty >/dev/null && curl -sS --max-time 10 http://tty.example.test/"],
    );
    spec.cwd = Some(fixture.base.path().join("ws"));
    let config = SpawnConfig { confinement, ..SpawnConfig::standard() };
    let (mut child, input) = codecoder_sandbox::spawn_pty(&spec, &config).unwrap();
    let mut output = Vec::new();
    let outcome = child.wait(&Wait::new(), &mut |chunk| output.extend_from_slice(&chunk.bytes));
    drop(input);
    let output = String::from_utf8_lossy(&output);
    let Outcome::Exited(status) = outcome.unwrap() else { panic!("stopped") };
    assert!(status.success(), "{backend}: {output}");
    assert!(output.contains("stand-in: GET http://tty.example.test/ HTTP/1.1"), "{output}");
}

#[test]
fn bwrap_proxied_on_a_terminal() {
    on_a_terminal("bwrap");
}

#[test]
fn landlock_proxied_on_a_terminal() {
    on_a_terminal("landlock");
}

/// git's ssh goes through the stage's SOCKS5 connect mode, unless the command names its own.
#[test]
fn a_proxied_command_gets_an_ssh_command_through_the_proxy_unless_it_has_one() {
    let fixture = Fixture::new();
    let Some(confinement) = confine("bwrap", fixture.policy()) else { return };
    let run = fixture.run(&confinement, "echo \"ssh=$GIT_SSH_COMMAND\"", &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.output.contains("ssh=ssh -o 'ProxyCommand="), "{run:?}");
    assert!(run.output.contains("__codecoder-socks-connect %h %p'"), "{run:?}");
    let own = [("GIT_SSH_COMMAND", "ssh -i my-key".to_owned())];
    let run = fixture.run(&confinement, "echo \"ssh=$GIT_SSH_COMMAND\"", &own);
    assert!(run.output.contains("ssh=ssh -i my-key\n"), "{run:?}");
}
