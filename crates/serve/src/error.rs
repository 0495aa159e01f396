//! The crate's one error type.

use std::path::PathBuf;

/// What can go wrong starting or running the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The `--listen` value is neither `HOST:PORT` nor `unix:PATH`.
    #[error("--listen {value}: expected 127.0.0.1:PORT, localhost:PORT, [::1]:PORT or unix:PATH")]
    BadListen {
        /// What was given.
        value: String,
    },
    /// A non-loopback address without auth configured explicitly.
    #[error(
        "refusing to listen on {addr}, which is not a loopback address, without explicit auth: \
         add `--auth token` (every request then needs the printed token; the server speaks plain \
         HTTP, so anyone on the path can read it: use an SSH tunnel or a TLS proxy)"
    )]
    Unprotected {
        /// The address.
        addr: String,
    },
    /// The address or socket could not be bound (taken, or not ours).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address or socket path.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The unix socket's directory is writable by others.
    #[error(
        "refusing to put the socket in {dir}, which other users may write to (mode {mode:o}): \
         use a directory only you can write to (serve creates a missing one with mode 0700), \
         such as $XDG_RUNTIME_DIR or ~/.codecoder"
    )]
    SharedSocketDir {
        /// The directory.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The OS's random source failed.
    #[error("cannot draw a token from the OS's random source: {message}")]
    Random {
        /// Why.
        message: String,
    },
    /// A file in the home could not be written or read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The discovery file could not be encoded.
    #[error("cannot write {path}: {source}")]
    Discovery {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A thread could not be started.
    #[error("cannot start a thread: {source}")]
    Thread {
        /// Why.
        source: std::io::Error,
    },
    /// The runtime refused (config, session start, index).
    #[error(transparent)]
    Runtime(codecoder_app::Error),
}

impl Error {
    /// Whether the caller asked for something that cannot be (exit 2): a bad `--listen`, an
    /// unprotected non-loopback address, a taken port, a runtime usage error.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::BadListen { .. }
            | Self::Unprotected { .. }
            | Self::Bind { .. }
            | Self::SharedSocketDir { .. } => true,
            Self::Runtime(err) => err.is_usage(),
            Self::Random { .. } | Self::Io(_) | Self::Discovery { .. } | Self::Thread { .. } => {
                false
            }
        }
    }
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, Error>;
