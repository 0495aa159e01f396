//! Unit tests of PTY sessions: the program sees a terminal, reads what is written to it, and
//! the terminal's Ctrl-C interrupts it.

use crate::{CommandSpec, Outcome, SpawnConfig, Wait, spawn_pty};

/// Runs `script` with `sh -c` on a PTY; each time the output so far ends with a prompt from
/// `replies`, writes its answer. Returns the output and the exit code.
fn converse(script: &str, replies: &[(&str, &str)]) -> (String, Option<i32>) {
    let spec = CommandSpec::new("sh", ["-c", script]);
    let (mut child, mut input) = spawn_pty(&spec, &SpawnConfig::standard()).unwrap();
    let mut output = String::new();
    let mut next = 0;
    let outcome = child
        .wait(&Wait::new(), &mut |chunk| {
            output.push_str(&String::from_utf8_lossy(&chunk.bytes));
            if let Some((prompt, answer)) = replies.get(next)
                && output.contains(prompt)
            {
                next += 1;
                input.write(answer.as_bytes()).unwrap();
            }
        })
        .unwrap();
    let code = match outcome {
        Outcome::Exited(status) => status.code(),
        stopped => panic!("{stopped:?}: {output}"),
    };
    (output, code)
}

#[test]
fn the_program_sees_a_terminal() {
    let (output, code) = converse("test -t 0 && test -t 1 && test -t 2 && echo on-a-tty", &[]);
    assert!(output.contains("on-a-tty"), "{output:?}");
    assert_eq!(code, Some(0));
}

#[test]
fn written_lines_reach_the_program() {
    let (output, code) =
        converse("printf 'name? '; read name; echo \"got:$name\"", &[("name? ", "ada\n")]);
    assert!(output.contains("got:ada"), "{output:?}");
    assert_eq!(code, Some(0));
}

#[test]
fn ctrl_c_interrupts_the_foreground_program() {
    let script = "trap 'echo interrupted; exit 3' INT; echo ready; while :; do sleep 0.05; done";
    let (output, code) = converse(script, &[("ready", "\u{3}")]);
    assert!(output.contains("interrupted"), "{output:?}");
    assert_eq!(code, Some(3));
}

#[test]
fn the_terminal_is_the_controlling_one() {
    // `/dev/tty` opens only for a process with a controlling terminal.
    let (output, code) = converse("echo via-tty > /dev/tty", &[]);
    assert!(output.contains("via-tty"), "{output:?}");
    assert_eq!(code, Some(0));
}
