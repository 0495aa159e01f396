//! What a confined command may touch: the `SandboxPolicy` the backends enforce, the protected
//! subpaths inside the writable roots (from `codecoder_policy::protect::Guard`, the one list the
//! approval chain and the file tools use too), and the default list of hidden credential stores.
//!
//! Invariants:
//! - Paths handed to a backend are absolute and canonical (symlinks resolved), so a backend never
//!   protects or hides a link instead of its target; paths that do not exist are left out (there
//!   is nothing to bind or grant), except where a backend says otherwise.
//! - A protected subpath is always inside a writable root, and the list has no duplicates.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use codecoder_policy::{Guard, Protection};

/// How much of the file system a confined command may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsAccess {
    /// Read everything (except hidden paths), write nothing.
    ReadOnly,
    /// Read everything (except hidden paths), write only inside the writable roots, minus their
    /// protected subpaths ([`Guard`]: `.git`, `.codecoder`, `.agents`, `.mcp.json`,
    /// `.claude/settings*.json`, git dirs and hooks paths, codecoder's home).
    WorkspaceWrite,
    /// Read and write everything (except hidden paths, which stay unreadable).
    FullAccess,
}

/// The rules a sandboxed command runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// What may be written.
    pub access: FsAccess,
    /// The complete list of writable roots (the caller passes the cwd, `/tmp`, `$TMPDIR` and the
    /// `--add-dir` paths); ignored unless `access` is `WorkspaceWrite`.
    pub writable_roots: Vec<PathBuf>,
    /// Whether the network may be used freely (outside of `AF_UNIX` sockets, which always may).
    pub network: bool,
    /// With `network` false: the managed proxy through which the command may still reach the
    /// network ([`NetworkMode::Proxied`]); `None` keeps the network off. Ignored when `network`
    /// is true.
    pub network_proxy: Option<NetworkProxy>,
    /// Paths that no command may read (credential stores); see [`default_hidden_paths`].
    pub hidden_paths: Vec<PathBuf>,
    /// Paths that stay read-only wherever they are (codecoder's home), besides the protected
    /// names inside the roots.
    pub protected_paths: Vec<PathBuf>,
}

/// The managed network proxy a confined command reaches the network through: one proxy that
/// speaks HTTP CONNECT, plain HTTP and SOCKS5, listening on a unix socket and on loopback TCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkProxy {
    /// The proxy's unix socket. Under bubblewrap the command's network namespace holds loopback
    /// only, and a relay inside it bridges each connection to `127.0.0.1:`[`RELAY_PORT`] to this
    /// socket, which is bound into the sandbox at the same path.
    pub socket: PathBuf,
    /// The same proxy's loopback TCP listener, for the Landlock backend when it cannot make a
    /// network namespace (user namespaces refused): the command is pointed at it, and Landlock
    /// lets TCP connect only to this port (ABI ≥ 4). `None`: the network is then off.
    pub tcp: Option<SocketAddr>,
}

/// The directories of the host's name-service sockets (systemd-resolved's varlink socket,
/// nscd's), through which `getaddrinfo` would resolve names outside the proxy: a proxied
/// command gets them empty where a mount namespace allows.
pub(crate) const NAME_SERVICE_DIRS: [&str; 3] =
    ["/run/systemd/resolve", "/run/nscd", "/var/run/nscd"];

/// The `candidates` (such as [`NAME_SERVICE_DIRS`]) that exist as directories, canonical, without
/// duplicates.
pub(crate) fn existing_dirs(candidates: &[&str]) -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = candidates.iter().map(PathBuf::from).collect();
    canonical_existing(&paths).into_iter().filter(|path| path.is_dir()).collect()
}

/// The directory (under the temp dir, one per user) that holds every network proxy's socket
/// directory. A bubblewrap sandbox gets it empty, with only its own command's socket bound in,
/// so a command cannot reach the proxy of another command or session (which may allow hosts its
/// own does not, or give a network to a session that has none): a unix socket's path is
/// reachable to any process that can see it, whatever the mount's read-only flag.
pub fn proxy_socket_root() -> PathBuf {
    let uid = nix::unistd::geteuid();
    std::env::temp_dir().join(format!("codecoder-proxy-{uid}"))
}

/// Makes [`proxy_socket_root`] (mode 0700) if missing and returns it.
///
/// # Errors
/// It cannot be made, or it is a symbolic link, not a directory, or not ours (a planted path
/// in a shared temp dir).
pub fn ensure_proxy_socket_root() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
    let root = proxy_socket_root();
    match std::fs::DirBuilder::new().mode(0o700).create(&root) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => {
            return Err(std::io::Error::new(err.kind(), format!("{}: {err}", root.display())));
        }
    }
    let meta = fs_err::symlink_metadata(&root)?;
    if !meta.is_dir() || meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(std::io::Error::other(format!(
            "{}: not a directory of this user; the network proxy will not put its sockets there",
            root.display()
        )));
    }
    Ok(root)
}

/// The port the relay listens on inside a bubblewrap sandbox's own network namespace (where
/// every port is free), so the proxy variables are known before the sandbox starts.
pub const RELAY_PORT: u16 = 3128;

/// How a confined command may reach the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkMode<'a> {
    /// No sockets but `AF_UNIX`.
    Off,
    /// Everything.
    Full,
    /// Only through the proxy: TCP stream sockets (no UDP, so no DNS of its own), with no route
    /// anywhere but the proxy.
    Proxied(&'a NetworkProxy),
}

/// Which sockets a confined command may create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sockets {
    /// `AF_UNIX` only (the network is off).
    Unix,
    /// `AF_UNIX`, plus TCP stream sockets over IPv4 and IPv6 (the network is proxied).
    UnixAndTcp,
    /// Any (the network is on).
    Any,
}

impl Sockets {
    /// Every value, in the order of [`Sockets::index`].
    pub(crate) const ALL: [Sockets; 3] = [Sockets::Unix, Sockets::UnixAndTcp, Sockets::Any];

    /// This value's position in [`Sockets::ALL`].
    pub(crate) fn index(self) -> usize {
        match self {
            Sockets::Unix => 0,
            Sockets::UnixAndTcp => 1,
            Sockets::Any => 2,
        }
    }
}

impl SandboxPolicy {
    /// The network mode `network` and `network_proxy` describe together.
    pub fn network_mode(&self) -> NetworkMode<'_> {
        match (self.network, &self.network_proxy) {
            (true, _) => NetworkMode::Full,
            (false, Some(proxy)) => NetworkMode::Proxied(proxy),
            (false, None) => NetworkMode::Off,
        }
    }

    /// The writable roots that exist, canonical, without duplicates. Empty unless `access` is
    /// `WorkspaceWrite`.
    pub fn existing_writable_roots(&self) -> Vec<PathBuf> {
        match self.access {
            FsAccess::WorkspaceWrite => canonical_existing(&self.writable_roots),
            FsAccess::ReadOnly | FsAccess::FullAccess => Vec::new(),
        }
    }

    /// The guard of the writable roots (empty unless `access` is `WorkspaceWrite`), computed from
    /// the file system now.
    pub fn guard(&self) -> Guard {
        match self.access {
            FsAccess::WorkspaceWrite => {
                Guard::new(&self.writable_roots, Path::new("/"), &self.protected_paths)
            }
            FsAccess::ReadOnly | FsAccess::FullAccess => Guard::default(),
        }
    }

    /// The read-only subpaths inside the writable roots that exist today ([`Guard::existing`]):
    /// `.git` (and, when `.git` is a `gitdir:` pointer file, the directory it names and that
    /// directory's common dir), `.codecoder`, `.agents`, `.mcp.json`, `.claude/settings*.json`,
    /// the `core.hooksPath` directory and the `protected_paths`, canonical. Only paths inside a
    /// writable root are listed: anything else is read-only already. A protected name that does
    /// not exist yet is not listed (bubblewrap and Landlock need an existing path to re-bind):
    /// what a command creates at one is removed once it has ended (`sweep.rs`).
    pub fn protected_subpaths(&self) -> Vec<PathBuf> {
        self.guard().existing()
    }

    /// The hidden paths that exist, canonical, without duplicates.
    pub fn existing_hidden_paths(&self) -> Vec<PathBuf> {
        canonical_existing(&self.hidden_paths)
    }

    /// Whether `path` (absolute) may be written under this policy, ignoring hidden paths.
    pub fn allows_write(&self, path: &Path) -> bool {
        match self.access {
            FsAccess::FullAccess => true,
            FsAccess::ReadOnly => false,
            FsAccess::WorkspaceWrite => {
                let resolved = codecoder_policy::resolve(path, Path::new("/"));
                let guard = self.guard();
                let inside_root = guard.roots().iter().any(|root| resolved.starts_with(root))
                    || self.writable_roots.iter().any(|root| path.starts_with(root));
                inside_root && self.protection(path).is_none()
            }
        }
    }

    /// Why writing `path` (absolute) is protected under this policy, if it is.
    pub fn protection(&self, path: &Path) -> Option<Protection> {
        if self.access != FsAccess::WorkspaceWrite {
            return None;
        }
        self.guard().check(&codecoder_policy::resolve(path, Path::new("/")))
    }
}

/// The credential stores hidden by default, under `home`: `~/.ssh`, `~/.aws`, `~/.gnupg`,
/// `~/.config/gcloud`, `~/.azure`, `~/.kube`, `~/.docker/config.json`, `~/.netrc`,
/// `~/.git-credentials`, plus `extra` (codecoder's own credentials file, whose location the
/// caller knows).
pub fn default_hidden_paths(home: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = [
        ".ssh",
        ".aws",
        ".gnupg",
        ".config/gcloud",
        ".azure",
        ".kube",
        ".docker/config.json",
        ".netrc",
        ".git-credentials",
    ]
    .iter()
    .map(|name| home.join(name))
    .collect();
    paths.extend(extra.iter().cloned());
    paths
}

fn canonical_existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        paths.iter().filter_map(|path| fs_err::canonicalize(path).ok()).collect();
    out.sort();
    out.dedup();
    out
}

/// The variables that point a command's HTTP clients at a proxy listening on `address`:
/// `HTTP_PROXY`, `HTTPS_PROXY` (`http://ADDRESS`), `ALL_PROXY` (`socks5h://ADDRESS`, so names are
/// resolved by the proxy), `NO_PROXY` (loopback), each in upper and lower case.
pub fn proxy_environment(address: SocketAddr) -> Vec<(String, String)> {
    use codecoder_protocol::env;
    let http = format!("http://{address}");
    let socks = format!("socks5h://{address}");
    let no_proxy = "localhost,127.0.0.1,::1".to_owned();
    let mut out = Vec::new();
    for (upper, lower, value) in [
        (env::HTTP_PROXY, env::HTTP_PROXY_LOWER, &http),
        (env::HTTPS_PROXY, env::HTTPS_PROXY_LOWER, &http),
        (env::ALL_PROXY, env::ALL_PROXY_LOWER, &socks),
        (env::NO_PROXY, env::NO_PROXY_LOWER, &no_proxy),
    ] {
        out.push((upper.to_owned(), value.clone()));
        out.push((lower.to_owned(), value.clone()));
    }
    out
}
