//! The re-exec stage: the product's own executable, started as
//! `exe __codecoder-sandbox-stage <options> -- program args…`, confines itself and then execs the
//! command in its place (same pid, same process group, so the spawner's TERM→KILL still reaches
//! it).
//!
//! Under bubblewrap (only when the filter could not be handed to bwrap on a pipe) the stage runs
//! inside the namespaces bwrap made and only sets
//! `PR_SET_NO_NEW_PRIVS` and installs the seccomp filter. Under the Landlock backend it also:
//! 1. makes the protected subpaths (`SandboxPolicy::protected_subpaths`: the policy crate's guard,
//!    `.git`, `.codecoder`, `.agents`, `.mcp.json`, … that exist) read-only with bind mounts in
//!    a private mount namespace (`unshare(CLONE_NEWNS)`, plus `CLONE_NEWUSER` when not root) —
//!    Landlock only grants, it cannot take `.git` back out of a writable root;
//! 2. when namespaces are refused, falls back to path grants instead: each writable root is
//!    granted child by child, leaving the protected ones out (creating a new entry directly in
//!    such a root is then refused too, but nothing protected becomes writable);
//! 3. builds a Landlock ruleset: read on `/` and write on the roots, where any tree holding a
//!    hidden path is granted child by child around it, so reading a hidden path fails with
//!    `EACCES` (the names in a hidden directory's parent stay listable); TCP bind/connect denied
//!    when the network is off; when it is proxied, the stage first enters a network namespace
//!    of its own (loopback only, with the relay, as under bubblewrap) where the mount namespace
//!    could be made, and otherwise allows only a connect to the proxy's TCP port on the host
//!    (ABI ≥ 4; below that, or without the proxy's port, a proxied network is off: seccomp alone
//!    cannot tell ports apart);
//!    signals scoped to the sandbox, and abstract unix sockets too unless the network is on
//!    (ABI ≥ 6);
//! 4. when running as root, drops from the capability bounding set what would let the command
//!    step around the sandbox (`CAP_SYS_PTRACE` above all: Landlock lets it read other
//!    processes' `/proc/<pid>/environ`), so the exec'd command never has them;
//! 5. installs the same seccomp filter;
//! 6. unless namespaces are off, enters a pid namespace of its own: it forks a tiny init (pid 1,
//!    killed with the stage) that forks the command and exits with it, so every process the
//!    command starts, `setsid` daemons included, ends when it ends or is cancelled. The stage
//!    waits and exits with the command's status.
//!
//! Under bubblewrap with a proxied network (`--relay SOCKET`), the stage also starts the relay
//! (`relay.rs`) inside bwrap's network namespace before it installs the filter and execs. The
//! stage sets the proxy variables itself when the Landlock backend's choice (relay, proxy port,
//! or off) differs from what the spawner assumed.
//!
//! Invariants:
//! - The stage never returns to the caller's `main` once it saw its marker: it execs the command
//!   (or waits for it, in a pid namespace) or prints one line to stderr and exits 126.
//! - The option encoding round-trips any path (arguments are `OsString`s, never re-split).

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

#[cfg(target_os = "linux")]
use crate::env;
use crate::policy::FsAccess;
use crate::policy::Sockets;
#[cfg(target_os = "linux")]
use crate::policy::{RELAY_PORT, proxy_environment};

/// The hidden first argument that turns the product's executable into the stage.
pub const STAGE_MARKER: &str = "__codecoder-sandbox-stage";

/// What the stage must do, as passed on its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StageArgs {
    /// Apply Landlock (and the protection mounts); otherwise seccomp only (inside bwrap).
    pub(crate) landlock: bool,
    /// The sockets the command may create: `off`, `proxied` or `on`.
    pub(crate) network: Sockets,
    /// Bubblewrap with a proxied network: the proxy's unix socket, which the relay bridges
    /// `127.0.0.1:RELAY_PORT` to.
    pub(crate) relay: Option<PathBuf>,
    /// Landlock with a proxied network: the one TCP port the command may connect to.
    pub(crate) proxy_port: Option<u16>,
    pub(crate) access: FsAccess,
    pub(crate) writable_roots: Vec<PathBuf>,
    pub(crate) protected: Vec<PathBuf>,
    pub(crate) hidden: Vec<PathBuf>,
    /// Never use the mount namespace (tests of the fallback).
    pub(crate) no_namespaces: bool,
    /// The command's stdin is a terminal (a PTY session) that it takes as its controlling
    /// terminal in a session of its own, so the terminal's Ctrl-C reaches the command's group and
    /// not the wrappers around it.
    pub(crate) tty: bool,
    pub(crate) command: Vec<OsString>,
}

impl StageArgs {
    /// The arguments after the marker.
    pub(crate) fn encode(&self) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec![
            "--mode".into(),
            (if self.landlock { "landlock" } else { "seccomp" }).into(),
            "--network".into(),
            match self.network {
                Sockets::Unix => "off",
                Sockets::UnixAndTcp => "proxied",
                Sockets::Any => "on",
            }
            .into(),
            "--access".into(),
            match self.access {
                FsAccess::ReadOnly => "read-only",
                FsAccess::WorkspaceWrite => "workspace-write",
                FsAccess::FullAccess => "full-access",
            }
            .into(),
        ];
        if self.no_namespaces {
            out.push("--no-namespaces".into());
        }
        if self.tty {
            out.push("--tty".into());
        }
        if let Some(socket) = &self.relay {
            out.push("--relay".into());
            out.push(socket.into());
        }
        if let Some(port) = self.proxy_port {
            out.push("--proxy-port".into());
            out.push(port.to_string().into());
        }
        for (flag, paths) in [
            ("--write", &self.writable_roots),
            ("--protect", &self.protected),
            ("--hide", &self.hidden),
        ] {
            for path in paths {
                out.push(flag.into());
                out.push(path.into());
            }
        }
        out.push("--".into());
        out.extend(self.command.iter().cloned());
        out
    }

    /// Parses what `encode` produced.
    pub(crate) fn parse(args: Vec<OsString>) -> Result<Self, String> {
        let mut parsed = StageArgs {
            landlock: false,
            network: Sockets::Unix,
            relay: None,
            proxy_port: None,
            access: FsAccess::ReadOnly,
            writable_roots: Vec::new(),
            protected: Vec::new(),
            hidden: Vec::new(),
            no_namespaces: false,
            tty: false,
            command: Vec::new(),
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let flag = arg.to_string_lossy().into_owned();
            if flag == "--" {
                parsed.command = args.collect();
                if parsed.command.is_empty() {
                    return Err("no command after `--`".to_owned());
                }
                return Ok(parsed);
            }
            if flag == "--no-namespaces" {
                parsed.no_namespaces = true;
                continue;
            }
            if flag == "--tty" {
                parsed.tty = true;
                continue;
            }
            let Some(value) = args.next() else {
                return Err(format!("option `{flag}` needs a value"));
            };
            let text = value.to_string_lossy();
            match flag.as_str() {
                "--mode" => parsed.landlock = parse_choice(&text, "landlock", "seccomp")?,
                "--network" => {
                    parsed.network = match text.as_ref() {
                        "off" => Sockets::Unix,
                        "proxied" => Sockets::UnixAndTcp,
                        "on" => Sockets::Any,
                        other => return Err(format!("unknown network `{other}`")),
                    };
                }
                "--relay" => parsed.relay = Some(value.into()),
                "--proxy-port" => {
                    let port = text.parse().map_err(|_| format!("bad port `{text}`"))?;
                    parsed.proxy_port = Some(port);
                }
                "--access" => {
                    parsed.access = match text.as_ref() {
                        "read-only" => FsAccess::ReadOnly,
                        "workspace-write" => FsAccess::WorkspaceWrite,
                        "full-access" => FsAccess::FullAccess,
                        other => return Err(format!("unknown access `{other}`")),
                    };
                }
                "--write" => parsed.writable_roots.push(value.into()),
                "--protect" => parsed.protected.push(value.into()),
                "--hide" => parsed.hidden.push(value.into()),
                other => return Err(format!("unknown option `{other}`")),
            }
        }
        Err("no `--` before the command".to_owned())
    }
}

fn parse_choice(value: &str, yes: &str, no: &str) -> Result<bool, String> {
    match value {
        v if v == yes => Ok(true),
        v if v == no => Ok(false),
        other => Err(format!("expected `{yes}` or `{no}`, got `{other}`")),
    }
}

/// When this process was started as the stage (its first argument is [`STAGE_MARKER`]), confines
/// it and execs the command; otherwise returns at once. The product's `main` calls it first.
/// On any error it prints one line to stderr and exits with status 126.
pub fn run_stage_if_requested() {
    let mut args = std::env::args_os();
    let _exe = args.next();
    let first = args.next();
    if first.as_deref() == Some(OsStr::new(crate::socks::SOCKS_CONNECT_MARKER)) {
        let rest: Vec<std::ffi::OsString> = args.collect();
        let code = crate::socks::run(&rest).unwrap_or_else(|message| {
            // This is the mode's `main` in effect: its one line of output is the error.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("codecoder socks-connect: {message}");
            }
            1
        });
        std::process::exit(code);
    }
    if first.as_deref() != Some(OsStr::new(STAGE_MARKER)) {
        return;
    }
    let message = match StageArgs::parse(args.collect()) {
        Ok(stage) => match confine_and_exec(&stage) {
            Ok(never) => match never {},
            Err(message) => message,
        },
        Err(message) => format!("bad stage arguments: {message}"),
    };
    // This is the stage's `main` in effect: its one line of output is the error.
    #[allow(clippy::print_stderr)]
    {
        eprintln!("codecoder sandbox: {message}");
    }
    std::process::exit(126);
}

#[cfg(target_os = "linux")]
fn confine_and_exec(stage: &StageArgs) -> Result<std::convert::Infallible, String> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    let mut sockets = stage.network;
    // The relay to start right before the command: under bubblewrap, or under Landlock in a
    // network namespace of its own. Started after the Landlock stage's pid namespace exists, so
    // it ends inside that namespace with the command, before the stage exits: a spawner never
    // finds it still alive in the command's group.
    let mut relay = None;
    if stage.landlock {
        let applied = linux::apply_landlock(stage)?;
        if sockets == Sockets::UnixAndTcp {
            match (&stage.relay, applied) {
                // A network namespace of its own: the relay is the one way out, as under
                // bubblewrap.
                (Some(socket), linux::Applied { own_network: true, .. }) => {
                    relay = Some(socket);
                    let relay = std::net::SocketAddr::from(([127, 0, 0, 1], RELAY_PORT));
                    linux::set_environment(&proxy_environment(relay), &[]);
                }
                // The host's network, with a connect to the proxy's port only.
                (_, linux::Applied { net_rules: true, .. }) if stage.proxy_port.is_some() => {}
                // Nothing would keep a TCP socket to the proxy: the network is off.
                _ => {
                    sockets = Sockets::Unix;
                    let names: Vec<String> = proxy_environment(([127, 0, 0, 1], 0).into())
                        .into_iter()
                        .map(|(name, _)| name)
                        .collect();
                    let disabled =
                        (env::CODECODER_SANDBOX_NETWORK_DISABLED.to_owned(), "1".to_owned());
                    linux::set_environment(&[disabled], &names);
                }
            }
        }
        // Landlock confines what the command touches, not how long its children live: a pid
        // namespace makes every process it starts end with it (`setsid` daemons included).
        if !stage.no_namespaces {
            linux::contain();
        }
    } else {
        nix::sys::prctl::set_no_new_privs()
            .map_err(|err| format!("setting PR_SET_NO_NEW_PRIVS: {err}"))?;
        relay = stage.relay.as_ref();
    }
    if let Some(socket) = relay {
        crate::relay::start(socket)?;
    }
    crate::seccomp::install(sockets)?;
    if stage.tty {
        crate::pty::take_terminal()
            .map_err(|err| format!("taking the terminal on stdin: {err}"))?;
    }
    let argv = stage
        .command
        .iter()
        .map(|arg| CString::new(arg.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| "an argument holds a NUL byte".to_owned())?;
    let Some(program) = argv.first() else { return Err("no command".to_owned()) };
    match nix::unistd::execvp(program, &argv) {
        Ok(never) => match never {},
        Err(err) => Err(format!("could not run `{}`: {err}", program.to_string_lossy())),
    }
}

#[cfg(not(target_os = "linux"))]
fn confine_and_exec(_stage: &StageArgs) -> Result<std::convert::Infallible, String> {
    Err("the re-exec stage is only used on Linux".to_owned())
}

#[cfg(target_os = "linux")]
mod linux {
    //! Landlock and mount-namespace setup, run in the single-threaded stage process.

    use std::path::{Path, PathBuf};

    use landlock::{
        ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, NetPort, PathBeneath, PathFd,
        Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    };
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    use nix::sys::statvfs::{FsFlags, statvfs};
    use nix::unistd::{getegid, geteuid};

    use crate::policy::{FsAccess, NAME_SERVICE_DIRS, RELAY_PORT, Sockets, existing_dirs};
    use crate::stage::StageArgs;

    /// Device files every command may read and write.
    const DEVICES: [&str; 7] =
        ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm"];

    /// Confines this process with Landlock; returns whether the kernel enforces TCP rules
    /// (ABI ≥ 4).
    /// What [`apply_landlock`] could do besides the file-system rules.
    #[derive(Debug, Clone, Copy)]
    pub(super) struct Applied {
        /// The kernel enforces Landlock's TCP rules (ABI ≥ 4).
        pub(super) net_rules: bool,
        /// The process is in a network namespace of its own (loopback only, up), for the relay.
        pub(super) own_network: bool,
    }

    pub(super) fn apply_landlock(stage: &StageArgs) -> Result<Applied, String> {
        let namespaces = !stage.no_namespaces && enter_namespaces(&stage.protected).is_ok();
        let own_network = namespaces
            && stage.network == Sockets::UnixAndTcp
            && stage.relay.is_some()
            && enter_network_namespace().is_ok();
        if own_network {
            // No name service but the proxy's: the host's resolver sockets are covered (best
            // effort: the TCP side stays confined either way).
            for dir in existing_dirs(&NAME_SERVICE_DIRS) {
                let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_RDONLY;
                let _ = mount(Some("tmpfs"), &dir, Some("tmpfs"), flags, None::<&str>);
            }
        }
        let mounted = stage.protected.is_empty() || namespaces;
        let abi = ABI::V6;
        let landlock_err = |err: landlock::RulesetError| format!("landlock: {err}");
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .map_err(landlock_err)?
            .scope(Scope::Signal)
            .map_err(landlock_err)?;
        if stage.network != Sockets::Any {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(ABI::V4))
                .map_err(landlock_err)?
                .scope(Scope::AbstractUnixSocket)
                .map_err(landlock_err)?;
        }
        let mut created = ruleset.create().map_err(landlock_err)?;
        if stage.network == Sockets::UnixAndTcp {
            // In a namespace of its own only the relay's port is anyone's business (the relay,
            // started after this, binds it); on the host's network, a connect to the proxy's.
            let rule = match (own_network, stage.proxy_port) {
                (true, _) => Some(NetPort::new(RELAY_PORT, AccessNet::from_all(ABI::V4))),
                (false, Some(port)) => Some(NetPort::new(port, AccessNet::ConnectTcp)),
                (false, None) => None,
            };
            if let Some(rule) = rule {
                created = created.add_rule(rule).map_err(landlock_err)?;
            }
        }
        let all = AccessFs::from_all(abi);
        let read = AccessFs::from_read(abi) | AccessFs::IoctlDev;
        let mut grants: Vec<(PathBuf, BitFlags<AccessFs>)> = Vec::new();
        let mut push = |paths: Vec<PathBuf>, access: BitFlags<AccessFs>| {
            grants.extend(paths.into_iter().map(|path| (path, access)));
        };
        // Listing a split directory stays possible: `ls ~` works, though Landlock's inheritance
        // then also lets the names (never the contents) inside a hidden directory be listed.
        let readable = grant_tree(Path::new("/"), &stage.hidden);
        push(readable.split, AccessFs::ReadDir.into());
        match stage.access {
            FsAccess::FullAccess => push(readable.whole, all),
            FsAccess::ReadOnly | FsAccess::WorkspaceWrite => {
                push(readable.whole, read);
                let mut excluded = stage.hidden.clone();
                if !mounted {
                    excluded.extend(stage.protected.iter().cloned());
                }
                if stage.access == FsAccess::WorkspaceWrite {
                    for root in &stage.writable_roots {
                        push(grant_tree(root, &excluded).whole, all);
                    }
                }
                push(DEVICES.iter().map(PathBuf::from).collect(), all);
            }
        }
        for (path, access) in grants {
            // A path that vanished since it was listed is simply not granted.
            let Ok(fd) = PathFd::new(&path) else { continue };
            let access = if path.is_dir() { access } else { access & AccessFs::from_file(abi) };
            created = created.add_rule(PathBeneath::new(fd, access)).map_err(landlock_err)?;
        }
        let status = created.restrict_self().map_err(landlock_err)?;
        // Best effort covers an older ABI (fewer rights handled), never no Landlock at all.
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err("landlock is not enforced by this kernel; use the bwrap backend".to_owned());
        }
        if geteuid().is_root() {
            drop_dangerous_capabilities()?;
        }
        let net_rules = match status.landlock {
            LandlockStatus::Available { effective_abi, .. } => effective_abi >= ABI::V4,
            LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => false,
        };
        Ok(Applied { net_rules, own_network })
    }

    /// Moves this process (already in a user namespace of its own, or root) into a fresh network
    /// namespace and brings its loopback interface up; nothing else exists there.
    #[allow(unsafe_code)]
    fn enter_network_namespace() -> Result<(), String> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

        use nix::libc;

        unshare(CloneFlags::CLONE_NEWNET).map_err(|err| format!("unshare: {err}"))?;
        // SAFETY: `socket` takes no pointers; its result is checked before use.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(format!("socket: {}", nix::errno::Errno::last()));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let control = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: `ifreq` is plain data; all zeroes is a valid value.
        let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        // SAFETY: SIOCGIFFLAGS and SIOCSIFFLAGS read and write the `ifreq` passed by pointer,
        // which lives across both calls; the flags member of the union is the one they use.
        unsafe {
            if libc::ioctl(control.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) != 0 {
                return Err(format!("reading lo's flags: {}", nix::errno::Errno::last()));
            }
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(control.as_raw_fd(), libc::SIOCSIFFLAGS, &request) != 0 {
                return Err(format!("bringing lo up: {}", nix::errno::Errno::last()));
            }
        }
        Ok(())
    }

    /// Sets `set` and removes `remove` in this process's environment, which the command's exec
    /// inherits.
    #[allow(unsafe_code)]
    pub(super) fn set_environment(set: &[(String, String)], remove: &[String]) {
        for name in remove {
            // SAFETY: the stage is single-threaded (it runs before `main` does anything else),
            // so nothing reads the environment concurrently.
            unsafe { std::env::remove_var(name) };
        }
        for (name, value) in set {
            // SAFETY: as above.
            unsafe { std::env::set_var(name, value) };
        }
    }

    /// Capabilities a confined root command must not get back at exec: process inspection,
    /// mounts and namespaces, raw devices and modules, network administration, clock, MAC and
    /// BPF. The file-permission ones stay: Landlock, not DAC, is the file-system boundary here.
    const DANGEROUS_CAPABILITIES: [(&str, i32); 15] = [
        ("CAP_NET_ADMIN", 12),
        ("CAP_NET_RAW", 13),
        ("CAP_SYS_MODULE", 16),
        ("CAP_SYS_RAWIO", 17),
        ("CAP_SYS_CHROOT", 18),
        ("CAP_SYS_PTRACE", 19),
        ("CAP_SYS_ADMIN", 21),
        ("CAP_SYS_BOOT", 22),
        ("CAP_SYS_TIME", 25),
        ("CAP_MKNOD", 27),
        ("CAP_MAC_OVERRIDE", 32),
        ("CAP_MAC_ADMIN", 33),
        ("CAP_SYSLOG", 34),
        ("CAP_PERFMON", 38),
        ("CAP_BPF", 39),
    ];

    #[allow(unsafe_code)]
    fn drop_dangerous_capabilities() -> Result<(), String> {
        use nix::libc;
        for (name, capability) in DANGEROUS_CAPABILITIES {
            // SAFETY: `PR_CAPBSET_DROP` takes a capability number and no pointers; the unused
            // arguments are zero as the man page asks.
            let result =
                unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong, 0, 0, 0) };
            // EINVAL: a capability this kernel does not know, so nothing to drop.
            if result != 0 && nix::errno::Errno::last() != nix::errno::Errno::EINVAL {
                return Err(format!("dropping {name}: {}", nix::errno::Errno::last()));
            }
        }
        Ok(())
    }

    /// The paths to grant so that all of `root` is covered except the `excluded` trees.
    #[derive(Debug, Default, PartialEq, Eq)]
    pub(crate) struct Grants {
        /// Granted whole: `root` itself when nothing excluded lies inside it, else its children,
        /// recursively. A symlinked child is granted (through its target) only when the target
        /// is clear of every excluded tree, so a link cannot smuggle a hidden path back in.
        pub(crate) whole: Vec<PathBuf>,
        /// The directories that were split because an excluded tree lies inside them.
        pub(crate) split: Vec<PathBuf>,
    }

    pub(crate) fn grant_tree(root: &Path, excluded: &[PathBuf]) -> Grants {
        let mut grants = Grants::default();
        walk(root, excluded, &mut grants);
        grants
    }

    fn walk(path: &Path, excluded: &[PathBuf], grants: &mut Grants) {
        if excluded.iter().any(|hidden| path.starts_with(hidden)) {
            return;
        }
        if !excluded.iter().any(|hidden| hidden.starts_with(path)) {
            grants.whole.push(path.to_path_buf());
            return;
        }
        grants.split.push(path.to_path_buf());
        let Ok(entries) = fs_err::read_dir(path) else { return };
        for entry in entries.flatten() {
            let child = entry.path();
            let is_link = entry.file_type().is_ok_and(|kind| kind.is_symlink());
            if !is_link {
                walk(&child, excluded, grants);
                continue;
            }
            let Ok(target) = fs_err::canonicalize(&child) else { continue };
            let overlaps = excluded
                .iter()
                .any(|hidden| target.starts_with(hidden) || hidden.starts_with(&target));
            if !overlaps {
                grants.whole.push(child);
            }
        }
    }

    /// Runs the rest of the stage as pid 2 of a new pid namespace whose pid 1 is a tiny init
    /// (this process, forked) that lives exactly as long as the command: when the command ends,
    /// or the stage is killed (the init dies with it, `PR_SET_PDEATHSIG`), the namespace ends and
    /// the kernel kills every process left in it. The stage itself waits and exits with the
    /// command's status (128 + N for a signal). Returns in the command's process only; does
    /// nothing when a pid namespace cannot be made here (best effort: the process-group kill
    /// still applies).
    #[allow(unsafe_code)]
    pub(super) fn contain() {
        use nix::sys::signal::Signal;
        use nix::unistd::{ForkResult, fork};

        if unshare(CloneFlags::CLONE_NEWPID).is_err() {
            return;
        }
        // SAFETY: the stage runs before `main` does anything else, with no other thread, so the
        // forked child may run any code.
        match unsafe { fork() } {
            Err(_) => return,
            Ok(ForkResult::Parent { child }) => std::process::exit(wait_for(child)),
            Ok(ForkResult::Child) => {}
        }
        // pid 1 of the namespace.
        if nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_err() {
            std::process::exit(126);
        }
        // SAFETY: as above; this init is single-threaded too.
        match unsafe { fork() } {
            Err(_) => std::process::exit(126),
            Ok(ForkResult::Child) => {}
            Ok(ForkResult::Parent { child }) => std::process::exit(reap_until(child)),
        }
    }

    /// Waits for `pid` and returns an exit code for its end.
    fn wait_for(pid: nix::unistd::Pid) -> i32 {
        use nix::sys::wait::{WaitStatus, waitpid};
        loop {
            match waitpid(pid, None) {
                Ok(WaitStatus::Exited(_, code)) => return code,
                Ok(WaitStatus::Signaled(_, signal, _)) => return 128 + signal as i32,
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return 126,
            }
        }
    }

    /// As pid 1: reaps every process of the namespace until `command` ends, and returns an exit
    /// code for its end.
    fn reap_until(command: nix::unistd::Pid) -> i32 {
        use nix::sys::wait::{WaitStatus, waitpid};
        loop {
            match waitpid(None, None) {
                Ok(WaitStatus::Exited(pid, code)) if pid == command => return code,
                Ok(WaitStatus::Signaled(pid, signal, _)) if pid == command => {
                    return 128 + signal as i32;
                }
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return 126,
            }
        }
    }

    /// Moves this process into a private mount namespace (inside a user namespace of its own,
    /// mapping its own ids, when not root) and makes `protected` read-only there.
    fn enter_namespaces(protected: &[PathBuf]) -> Result<(), String> {
        let euid = geteuid();
        if euid.is_root() {
            unshare(CloneFlags::CLONE_NEWNS).map_err(|err| format!("unshare: {err}"))?;
        } else {
            let egid = getegid();
            unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
                .map_err(|err| format!("unshare: {err}"))?;
            let write = |file: &str, text: String| {
                fs_err::write(file, text).map_err(|err| format!("user namespace: {err}"))
            };
            write("/proc/self/setgroups", "deny".to_owned())?;
            write("/proc/self/uid_map", format!("{euid} {euid} 1"))?;
            write("/proc/self/gid_map", format!("{egid} {egid} 1"))?;
        }
        mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
            .map_err(|err| format!("making mounts private: {err}"))?;
        for path in protected {
            mount(Some(path), path, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>)
                .map_err(|err| format!("bind-mounting {}: {err}", path.display()))?;
            // A remount must keep the flags a user namespace may not drop.
            let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
            if let Ok(stat) = statvfs(path) {
                let kept = stat.flags();
                for (fs_flag, ms_flag) in [
                    (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
                    (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
                    (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
                    (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
                    (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
                    (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
                ] {
                    if kept.contains(fs_flag) {
                        flags |= ms_flag;
                    }
                }
            }
            mount(None::<&str>, path, None::<&str>, flags, None::<&str>)
                .map_err(|err| format!("making {} read-only: {err}", path.display()))?;
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
#[cfg(all(test, target_os = "linux"))]
pub(crate) use linux::{Grants, grant_tree};

#[cfg(test)]
mod tests;
