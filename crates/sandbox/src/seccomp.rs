//! The seccomp filter every confined command runs under (Linux), installed right before the
//! command is exec'd: by bubblewrap from the compiled program (`--seccomp FD`), or by the re-exec
//! stage under Landlock.
//!
//! Invariants:
//! - `ptrace`, `process_vm_readv`/`process_vm_writev` and the `io_uring_*` calls (which can do
//!   socket work behind the filter's back) always fail with `EPERM`.
//! - With the network off, `socket` and `socketpair` fail with `EPERM` for every address family
//!   but `AF_UNIX`; since no other socket can be created, `connect`, `bind` and friends need no
//!   rule of their own and keep working on `AF_UNIX` sockets (ssh-agent, docker, language
//!   servers).
//! - With the network proxied, `socket` also allows `AF_INET`/`AF_INET6`, but only stream
//!   sockets over TCP (protocol 0 or `IPPROTO_TCP`): no UDP (so no DNS query of its own), no raw
//!   socket, no SCTP or MPTCP. Where the TCP connection may go is the backend's part (an empty
//!   network namespace, or Landlock's port rule).
//! - Everything else is allowed: the filter narrows, it is not the file-system sandbox.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use crate::policy::Sockets;

/// Builds and installs the filter on the calling thread. `PR_SET_NO_NEW_PRIVS` must be set
/// (the stage sets it, or Landlock's `restrict_self` did).
pub(crate) fn install(sockets: Sockets) -> Result<(), String> {
    let program = build(sockets)?;
    seccompiler::apply_filter(&program).map_err(|err| format!("installing seccomp filter: {err}"))
}

pub(crate) fn build(sockets: Sockets) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for syscall in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        // An empty rule list matches every call of that syscall.
        rules.insert(syscall, Vec::new());
    }
    let condition = |arg: u8, op: SeccompCmpOp, value: i32| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value as u64)
            .map_err(|err| format!("building seccomp filter: {err}"))
    };
    let rule = |conditions: Vec<SeccompCondition>| {
        SeccompRule::new(conditions).map_err(|err| format!("building seccomp filter: {err}"))
    };
    match sockets {
        Sockets::Any => {}
        Sockets::Unix => {
            let not_unix = rule(vec![condition(0, SeccompCmpOp::Ne, libc::AF_UNIX)?])?;
            rules.insert(libc::SYS_socket, vec![not_unix.clone()]);
            rules.insert(libc::SYS_socketpair, vec![not_unix]);
        }
        Sockets::UnixAndTcp => {
            // A rule matches (and the call fails) when all its conditions hold; any matching
            // rule is enough.
            let mut socket_rules = vec![rule(vec![
                condition(0, SeccompCmpOp::Ne, libc::AF_UNIX)?,
                condition(0, SeccompCmpOp::Ne, libc::AF_INET)?,
                condition(0, SeccompCmpOp::Ne, libc::AF_INET6)?,
            ])?];
            for family in [libc::AF_INET, libc::AF_INET6] {
                // The type's low four bits are the kind; the flags above them
                // (`SOCK_NONBLOCK`, `SOCK_CLOEXEC`) are left alone.
                for kind in (0..16).filter(|kind| *kind != libc::SOCK_STREAM) {
                    socket_rules.push(rule(vec![
                        condition(0, SeccompCmpOp::Eq, family)?,
                        condition(1, SeccompCmpOp::MaskedEq(0xf), kind)?,
                    ])?);
                }
                socket_rules.push(rule(vec![
                    condition(0, SeccompCmpOp::Eq, family)?,
                    condition(2, SeccompCmpOp::Ne, 0)?,
                    condition(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP)?,
                ])?);
            }
            rules.insert(libc::SYS_socket, socket_rules);
            rules.insert(
                libc::SYS_socketpair,
                vec![rule(vec![condition(0, SeccompCmpOp::Ne, libc::AF_UNIX)?])?],
            );
        }
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|err| format!("seccomp does not support this architecture: {err}"))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|err| format!("building seccomp filter: {err}"))?;
    BpfProgram::try_from(filter).map_err(|err| format!("compiling seccomp filter: {err}"))
}
