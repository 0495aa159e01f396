//! Unit tests of the reaper: its message format, and its script run by itself on a socket of
//! the test's own, which ends an announced group (a background grandchild and a `setsid` one
//! included) at end of file and spares a withdrawn one and one whose pid was reused.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Line, SCRIPT, read_own_stat, start_time};

fn line(sign: u8, number: u32) -> String {
    let mut line = Line::new(sign);
    line.push_number(number);
    String::from_utf8(line.bytes[..line.len].to_vec()).unwrap()
}

#[test]
fn a_line_is_a_sign_a_number_and_a_newline() {
    assert_eq!(line(b'+', 0), "+0\n");
    assert_eq!(line(b'-', 7), "-7\n");
    assert_eq!(line(b'+', 4_194_304), "+4194304\n");
    assert_eq!(line(b'+', u32::MAX), "+4294967295\n");
    let mut line = Line::new(b'+');
    line.push_number(42);
    line.push_field(b"123456");
    assert_eq!(&line.bytes[..line.len], b"+42 123456\n");
}

#[test]
fn the_start_time_is_the_twentieth_field_after_the_command() {
    let stat = b"77 (a) b (c) S 1 77 77 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1 2 3\n";
    assert_eq!(start_time(stat), Some(&b"98765"[..]));
    assert_eq!(start_time(b"77 (short) S 1"), None);
    let mut buffer = [0u8; 1024];
    let own = read_own_stat(&mut buffer).unwrap();
    let text = String::from_utf8_lossy(own).into_owned();
    let expected = text.rsplit_once(')').unwrap().1.split_whitespace().nth(19).unwrap();
    assert_eq!(start_time(own), Some(expected.as_bytes()));
}

/// The start time of process `pid`, as `/proc` gives it.
fn start_of(pid: u32) -> String {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit_once(')').unwrap().1.split_whitespace().nth(19).unwrap().to_owned()
}

/// The pids of the live processes whose command line is exactly `sleep DURATION`.
fn sleepers(duration: &str) -> Vec<u32> {
    let argv = format!("sleep\0{duration}\0");
    fs_err::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let cmdline = fs_err::read(entry.path().join("cmdline")).ok()?;
            let stat = fs_err::read_to_string(entry.path().join("stat")).ok()?;
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            (cmdline == argv.as_bytes() && state != 'Z').then_some(pid)
        })
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(30), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `sh -c SCRIPT` in a group of its own reading `socket`, from a shell that exits at
/// once: the supervisor's parent is gone, as codecoder is when the socket closes (it waits for
/// that before it stops anything).
#[allow(clippy::disallowed_methods)] // A test of the crate that spawns processes.
fn supervisor(socket: UnixStream) {
    let mut command = Command::new("/bin/sh");
    command
        .args(["-c", "exec 3<&0; /bin/sh -c \"$0\" <&3 3<&- &", SCRIPT])
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(socket)));
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    assert!(command.status().unwrap().success());
}

/// A process group started by the test, killed whole when dropped (a failed assertion included).
struct Group(std::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.0.id()).unwrap());
        let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// Starts `script` in a process group of its own; its pid is the group's id.
#[allow(clippy::disallowed_methods)] // A test of the crate that spawns processes.
fn group(script: &str) -> Group {
    let mut command = Command::new("/bin/sh");
    command.args(["-c", script]);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    Group(command.spawn().unwrap())
}

#[test]
fn the_script_ends_an_announced_group_at_end_of_file_and_spares_a_withdrawn_one() {
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    supervisor(theirs);
    let doomed = group("sleep 951.25 & setsid sleep 951.25 & sleep 951.25; wait");
    let spared = group("sleep 952.5; wait");
    wait_for("the sleepers never started", || {
        sleepers("951.25").len() == 3 && sleepers("952.5").len() == 1
    });
    // The spared group is withdrawn; the third is a reused pid (the test's own, with another
    // start time), so its group is left alone too; the fourth is long gone.
    let (doomed_id, spared_id, own) = (doomed.0.id(), spared.0.id(), std::process::id());
    let announce = format!(
        "+{doomed_id} {}\n+{spared_id} {}\n+{own} 1\n+4000000 -\n-{spared_id}\n",
        start_of(doomed_id),
        start_of(spared_id)
    );
    ours.write_all(announce.as_bytes()).unwrap();
    drop(ours);
    wait_for("an announced process outlived the socket", || sleepers("951.25").is_empty());
    assert_eq!(sleepers("952.5").len(), 1, "a withdrawn group was killed");
}
