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
//! - Everything else is allowed: the filter narrows, it is not the file-system sandbox.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// Builds and installs the filter on the calling thread. `PR_SET_NO_NEW_PRIVS` must be set
/// (the stage sets it, or Landlock's `restrict_self` did).
pub(crate) fn install(network: bool) -> Result<(), String> {
    let program = build(network)?;
    seccompiler::apply_filter(&program).map_err(|err| format!("installing seccomp filter: {err}"))
}

pub(crate) fn build(network: bool) -> Result<BpfProgram, String> {
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
    if !network {
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(|err| format!("building seccomp filter: {err}"))?;
        let rule = SeccompRule::new(vec![not_unix])
            .map_err(|err| format!("building seccomp filter: {err}"))?;
        rules.insert(libc::SYS_socket, vec![rule.clone()]);
        rules.insert(libc::SYS_socketpair, vec![rule]);
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
