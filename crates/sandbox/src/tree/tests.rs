//! Unit tests of reading the process tree.

use super::*;

#[test]
fn stat_lines_with_odd_command_names_parse() {
    let line = "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 \
                1000 10 18446744073709551615";
    let parsed = parse(4242, line).unwrap();
    assert_eq!(
        (parsed.ppid, parsed.pgrp, parsed.start, parsed.live, parsed.stopped),
        (1, 4242, 987_654, true, false)
    );
    let zombie = line.replace(") S 1", ") Z 1");
    assert!(!parse(4242, &zombie).unwrap().live);
    let stopped = line.replace(") S 1", ") T 1");
    assert!(parse(4242, &stopped).unwrap().stopped);
    assert_eq!(parse(1, "1 (init"), None);
}

#[test]
fn this_process_is_tracked_by_pid_and_start_time() {
    let me = std::process::id();
    let now = stat(me).unwrap();
    let tracked = Tracked { pid: me, ppid: now.ppid, pgrp: now.pgrp, start: now.start };
    assert!(!tracked.namespace_init());
    assert!(tracked.alive());
    // The same pid with another start time is another process.
    let reused = Tracked { start: now.start + 1, ..tracked };
    assert!(!reused.alive());
}

#[test]
fn a_tree_holds_the_roots_and_their_descendants() {
    let stat = |pid, ppid, pgrp, live| Stat { pid, ppid, pgrp, start: 1, live, stopped: false };
    let processes = [
        stat(10, 1, 10, true),
        stat(11, 10, 11, true), // left the group
        stat(12, 11, 11, true),
        stat(13, 10, 10, false), // a zombie
        stat(14, 1, 14, true),   // not related
        stat(15, 12, 15, true),
    ];
    let pids: Vec<u32> = walk(&processes, vec![10]).iter().map(|p| p.pid).collect();
    assert_eq!(pids, [10, 11, 12, 15]);
}
