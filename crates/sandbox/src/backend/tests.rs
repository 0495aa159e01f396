//! Unit tests of command wrapping for each backend.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::backend::bwrap_args;
use crate::{Backend, FsAccess, NetworkProxy, STAGE_MARKER, Sandbox, SandboxPolicy, env};

struct Fixture {
    base: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let base = tempfile::tempdir().unwrap();
        for dir in ["ws/.git", "ws/.codecoder", "home/.ssh"] {
            fs_err::create_dir_all(base.path().join(dir)).unwrap();
        }
        fs_err::write(base.path().join("home/.netrc"), "machine x").unwrap();
        Fixture { base }
    }

    fn path(&self, relative: &str) -> PathBuf {
        fs_err::canonicalize(self.base.path()).unwrap().join(relative)
    }

    fn policy(&self, network: bool) -> SandboxPolicy {
        SandboxPolicy {
            access: FsAccess::WorkspaceWrite,
            writable_roots: vec![self.path("ws"), self.path("missing-root")],
            network,
            network_proxy: None,
            protected_paths: Vec::new(),
            hidden_paths: vec![
                self.path("home/.ssh"),
                self.path("home/.netrc"),
                self.path("home/.aws"),
            ],
        }
    }
}

fn strings(args: &[OsString]) -> Vec<String> {
    args.iter().map(|arg| arg.to_string_lossy().into_owned()).collect()
}

fn contains_run(haystack: &[String], needle: &[&str]) -> bool {
    haystack.windows(needle.len()).any(|window| window.iter().zip(needle).all(|(a, b)| a == b))
}

#[test]
fn bwrap_binds_roots_protects_and_masks() {
    let fixture = Fixture::new();
    let ws = fixture.path("ws").display().to_string();
    let args = strings(&bwrap_args(&fixture.policy(false), None));
    assert_eq!(args[..3], ["--ro-bind", "/", "/"]);
    assert!(contains_run(&args, &["--bind", &ws, &ws]), "{args:?}");
    let git = format!("{ws}/.git");
    let codecoder = format!("{ws}/.codecoder");
    assert!(contains_run(&args, &["--ro-bind", &git, &git]), "{args:?}");
    assert!(contains_run(&args, &["--ro-bind", &codecoder, &codecoder]), "{args:?}");
    let ssh = fixture.path("home/.ssh").display().to_string();
    assert!(contains_run(&args, &["--perms", "0000", "--tmpfs", &ssh, "--remount-ro", &ssh]));
    let netrc = fixture.path("home/.netrc").display().to_string();
    let at = args.iter().position(|arg| *arg == netrc).unwrap();
    assert_eq!(args[at - 3..at - 1], ["0000", "--ro-bind-data"]);
    for flag in ["--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"] {
        assert!(args.contains(&flag.to_owned()), "{flag} missing: {args:?}");
    }
    assert!(contains_run(&args, &["--cap-drop", "ALL"]));
    // Missing roots and hidden paths are left out; the protected binds come after the roots.
    assert!(!args.iter().any(|arg| arg.contains("missing-root") || arg.contains(".aws")));
    let bind = args.iter().position(|arg| *arg == ws).unwrap();
    let protect = args.iter().position(|arg| *arg == git).unwrap();
    assert!(bind < protect);
}

#[test]
fn bwrap_keeps_the_network_when_allowed() {
    let fixture = Fixture::new();
    let args = strings(&bwrap_args(&fixture.policy(true), Some(&fixture.path("ws"))));
    assert!(!args.contains(&"--unshare-net".to_owned()));
    assert!(contains_run(&args, &["--chdir", &fixture.path("ws").display().to_string()]));
}

#[test]
fn wrapping_hands_bwrap_the_filter_and_runs_the_stage_under_landlock() {
    let fixture = Fixture::new();
    let stage = PathBuf::from("/opt/codecoder");
    let bwrap =
        Sandbox::new(fixture.policy(false), Backend::Bwrap("/usr/bin/bwrap".into()), stage.clone());
    let wrapped = bwrap.wrap(&"ls".into(), &["-l".into()], None);
    let (program, args, env_vars) = (wrapped.program, wrapped.args, wrapped.env);
    assert_eq!(program, "/usr/bin/bwrap");
    let args = strings(&args);
    // bwrap installs the seccomp program it reads from the inherited descriptor; no stage.
    let fd = wrapped.keep.as_ref().map(|fd| std::os::fd::AsRawFd::as_raw_fd(fd).to_string());
    let fd = fd.expect("a seccomp descriptor");
    assert!(contains_run(&args, &["--seccomp", &fd, "--", "ls", "-l"]), "{args:?}");
    assert!(!args.iter().any(|arg| arg == STAGE_MARKER), "{args:?}");
    assert_eq!(args[args.len() - 3..], ["--", "ls", "-l"]);
    assert_eq!(
        env_vars,
        [
            (OsString::from(env::CODECODER_SANDBOX), OsString::from("bwrap")),
            (OsString::from(env::CODECODER_SANDBOX_NETWORK_DISABLED), OsString::from("1")),
        ]
    );

    let mut policy = fixture.policy(true);
    policy.access = FsAccess::ReadOnly;
    let landlock = Sandbox::new(policy, Backend::Landlock, stage);
    let wrapped = landlock.wrap(&"ls".into(), &[], None);
    assert!(wrapped.keep.is_none());
    let (program, args, env_vars) = (wrapped.program, wrapped.args, wrapped.env);
    assert_eq!(program, "/opt/codecoder");
    let args = strings(&args);
    assert_eq!(args[..5], [STAGE_MARKER, "--mode", "landlock", "--network", "on"]);
    assert!(contains_run(&args, &["--access", "read-only"]));
    assert!(contains_run(&args, &["--hide", &fixture.path("home/.ssh").display().to_string()]));
    assert_eq!(env_vars, [(OsString::from(env::CODECODER_SANDBOX), OsString::from("landlock"))]);
}

#[cfg(target_os = "linux")]
#[test]
fn seccomp_filters_compile() {
    use crate::policy::Sockets;
    let length = |sockets| crate::seccomp::build(sockets).unwrap().len();
    assert!(length(Sockets::Any) < length(Sockets::Unix));
    assert!(length(Sockets::Unix) < length(Sockets::UnixAndTcp));
}

fn proxied(fixture: &Fixture, tcp: Option<&str>) -> SandboxPolicy {
    let socket = fixture.path("proxy.sock");
    fs_err::write(&socket, "").unwrap();
    SandboxPolicy {
        network_proxy: Some(NetworkProxy { socket, tcp: tcp.map(|tcp| tcp.parse().unwrap()) }),
        ..fixture.policy(false)
    }
}

fn env_value<'a>(env_vars: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsString> {
    env_vars.iter().find(|(key, _)| key == name).map(|(_, value)| value)
}

#[test]
fn a_proxied_network_under_bwrap_gets_an_empty_namespace_the_socket_and_the_relay() {
    let fixture = Fixture::new();
    let policy = proxied(&fixture, None);
    let socket = fixture.path("proxy.sock").display().to_string();
    let args = strings(&bwrap_args(&policy, None));
    assert!(args.contains(&"--unshare-net".to_owned()), "{args:?}");
    assert!(contains_run(&args, &["--bind", &socket, &socket]), "{args:?}");
    let sandbox = Sandbox::new(policy, Backend::Bwrap("/usr/bin/bwrap".into()), "/opt/cc".into());
    let wrapped = sandbox.wrap(&"curl".into(), &[], None);
    // The stage starts the relay and installs the filter itself.
    assert!(wrapped.keep.is_none());
    let args = strings(&wrapped.args);
    assert!(contains_run(&args, &["--", "/opt/cc", STAGE_MARKER, "--mode", "seccomp"]));
    assert!(contains_run(&args, &["--network", "proxied"]), "{args:?}");
    assert!(contains_run(&args, &["--relay", &socket]), "{args:?}");
    assert!(!args.contains(&"--proxy-port".to_owned()), "{args:?}");
    let relay = format!("127.0.0.1:{}", crate::RELAY_PORT);
    for (name, value) in [
        ("HTTP_PROXY", format!("http://{relay}")),
        ("https_proxy", format!("http://{relay}")),
        ("ALL_PROXY", format!("socks5h://{relay}")),
        ("all_proxy", format!("socks5h://{relay}")),
        ("NO_PROXY", "localhost,127.0.0.1,::1".to_owned()),
        ("no_proxy", "localhost,127.0.0.1,::1".to_owned()),
    ] {
        assert_eq!(env_value(&wrapped.env, name), Some(&OsString::from(value)), "{name}");
    }
    assert_eq!(env_value(&wrapped.env, env::CODECODER_SANDBOX_NETWORK_DISABLED), None);
}

#[test]
fn a_proxied_network_under_landlock_gets_the_relay_or_the_proxy_port() {
    let fixture = Fixture::new();
    let socket = fixture.path("proxy.sock").display().to_string();
    let policy = proxied(&fixture, Some("127.0.0.1:4567"));
    let sandbox = Sandbox::new(policy.clone(), Backend::Landlock, "/cc".into());
    let wrapped = sandbox.wrap(&"curl".into(), &[], None);
    let args = strings(&wrapped.args);
    assert!(contains_run(&args, &["--network", "proxied"]), "{args:?}");
    // The stage makes a network namespace with the relay when it can (and then points the
    // variables at the relay), else allows the proxy's port.
    assert!(contains_run(&args, &["--relay", &socket]), "{args:?}");
    assert!(contains_run(&args, &["--proxy-port", "4567"]), "{args:?}");
    let http = OsString::from("http://127.0.0.1:4567");
    assert_eq!(env_value(&wrapped.env, "http_proxy"), Some(&http));

    // Without namespaces: the port rule only.
    let sandbox = Sandbox::new(policy, Backend::Landlock, "/cc".into()).without_namespaces();
    let wrapped = sandbox.wrap(&"curl".into(), &[], None);
    let args = strings(&wrapped.args);
    assert!(contains_run(&args, &["--proxy-port", "4567"]), "{args:?}");
    assert!(!args.contains(&"--relay".to_owned()), "{args:?}");

    // Without the proxy's TCP address: the relay, or (without namespaces) no network at all.
    let sandbox = Sandbox::new(proxied(&fixture, None), Backend::Landlock, "/cc".into());
    let wrapped = sandbox.wrap(&"curl".into(), &[], None);
    let args = strings(&wrapped.args);
    assert!(contains_run(&args, &["--relay", &socket]), "{args:?}");
    assert!(!args.contains(&"--proxy-port".to_owned()), "{args:?}");
    let relay = OsString::from(format!("http://127.0.0.1:{}", crate::RELAY_PORT));
    assert_eq!(env_value(&wrapped.env, "http_proxy"), Some(&relay));
    let sandbox =
        Sandbox::new(proxied(&fixture, None), Backend::Landlock, "/cc".into()).without_namespaces();
    let wrapped = sandbox.wrap(&"curl".into(), &[], None);
    let args = strings(&wrapped.args);
    assert!(contains_run(&args, &["--network", "off"]), "{args:?}");
    assert_eq!(env_value(&wrapped.env, "http_proxy"), None);
    let disabled = env_value(&wrapped.env, env::CODECODER_SANDBOX_NETWORK_DISABLED);
    assert_eq!(disabled, Some(&OsString::from("1")));
}

#[test]
fn name_service_directories_are_found_canonical_and_once() {
    let fixture = Fixture::new();
    let dir = fixture.path("resolve");
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(fixture.path("file"), "").unwrap();
    std::os::unix::fs::symlink(&dir, fixture.path("link")).unwrap();
    let candidates = [
        fixture.path("resolve"),
        fixture.path("link"),
        fixture.path("file"),
        fixture.path("missing"),
    ];
    let candidates: Vec<String> =
        candidates.iter().map(|path| path.display().to_string()).collect();
    let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
    assert_eq!(crate::policy::existing_dirs(&candidates), vec![dir]);
}
