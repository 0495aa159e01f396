//! The first request's wait for MCP servers still starting is cut short by a cancel: `exec`
//! with a server that never answers `initialize` (its startup timeout far away), interrupted
//! with SIGINT once the session started, ends as interrupted without a model request.

use std::io::BufRead;
use std::process::Stdio;
use std::time::{Duration, Instant};

use codecoder_test_support::{FakeModelServer, Reply, Script};

use crate::exec::{Run, openai_env};

#[test]
fn sigint_ends_the_wait_for_a_server_still_starting() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp_servers.slow]\ncommand = \"sleep\"\nargs = [\"600\"]\nstartup_timeout_sec = 600\n",
    )
    .unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::text("never asked"))).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let mut child = run
        .command(&["-s", "read-only", "exec", "--json", "hello"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first line comes once the session (and its Ctrl-C handler) is up.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains("thread.started"), "{first}");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    // Bounded only so that a wait that ignores the cancel fails here instead of hanging for the
    // server's ten-minute startup timeout.
    let limit = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > limit {
            let _ = child.kill();
            panic!("exec still waits for the MCP server after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{first}{rest}");
    assert!(!rest.contains("turn.completed"), "{rest}");
    assert_eq!(server.requests().len(), 0, "the model was asked");
}
