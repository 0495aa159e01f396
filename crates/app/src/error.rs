//! The runtime's one error type: the libraries' errors it meets while assembling a session, plus
//! `Usage` for a request or configuration that cannot work (a front-end exits 2 on it).

/// Why a session could not be assembled or a runtime service failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request or the configuration cannot work as given (an unknown provider, a missing
    /// API key, a session that does not exist, a bad `--replay` log).
    #[error("{message}")]
    Usage {
        /// What is wrong, and what to do about it.
        message: String,
    },
    /// A config file or `-c` override is invalid.
    #[error(transparent)]
    Config(#[from] codecoder_config::Error),
    /// The session log or its index.
    #[error(transparent)]
    Session(#[from] codecoder_session::Error),
    /// The model provider's configuration.
    #[error(transparent)]
    Provider(#[from] codecoder_providers::Error),
    /// The prompt builder.
    #[error(transparent)]
    Context(#[from] codecoder_context::Error),
    /// The agent loop.
    #[error(transparent)]
    Kernel(#[from] codecoder_kernel::Error),
    /// The hook configuration.
    #[error("loading hooks")]
    Hooks(#[from] codecoder_hooks::Error),
    /// A permission rule of one config layer.
    #[error("[permissions] in {origin}")]
    Rules {
        /// The layer.
        origin: String,
        /// What is wrong with the rule.
        source: Box<codecoder_policy::Error>,
    },
    /// Spawning or confining a process.
    #[error(transparent)]
    Sandbox(#[from] codecoder_sandbox::Error),
    /// A confined command was asked for where no sandbox backend works.
    #[error("no sandbox backend works here, so the command was not run ({reason})")]
    NoSandbox {
        /// Why the backends failed.
        reason: String,
    },
    /// A provider's server did not list the models it serves (`codecoder models`).
    #[error(
        "could not list the models of provider `{provider}` at {url}: {cause}{}",
        list_hint(cause, provider)
    )]
    ModelList {
        /// The provider id.
        provider: String,
        /// The listing's URL.
        url: String,
        /// What went wrong (its text is part of this message); boxed to keep the error small.
        cause: Box<codecoder_providers::Error>,
    },
    /// A file or directory the runtime needs.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// What to do about a listing that failed: a server that does not answer is most often not
/// started.
fn list_hint(cause: &codecoder_providers::Error, provider: &str) -> String {
    match cause {
        codecoder_providers::Error::Connection { .. } => format!(
            "; is the server running? (start it, or set base_url in [model_providers.{provider}])"
        ),
        _ => String::new(),
    }
}

impl Error {
    /// A usage error with `message`.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::Usage { message: message.into() }
    }

    /// True when the request or the configuration is at fault, or the session is in use by
    /// another process (front-ends exit 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::Usage { .. }
                | Self::Config(_)
                | Self::Rules { .. }
                | Self::Hooks(
                    codecoder_hooks::Error::Json { .. } | codecoder_hooks::Error::Shape { .. }
                )
                | Self::Session(codecoder_session::Error::Locked { .. })
        )
    }

    /// True when a session named by id, prefix or path does not exist, or the prefix names
    /// several: the name given is at fault.
    pub fn is_unknown_session(&self) -> bool {
        matches!(
            self,
            Self::Session(
                codecoder_session::Error::NotFound { .. }
                    | codecoder_session::Error::Ambiguous { .. }
            )
        )
    }

    /// True when an undo or rewind found no turn whose files it could restore.
    pub fn is_nothing_to_undo(&self) -> bool {
        matches!(self, Self::Session(codecoder_session::Error::NothingToUndo { .. }))
    }

    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Self {
        Self::Io { context: "writing".to_owned(), source }
    }
}

/// The runtime's result.
pub type Result<T> = std::result::Result<T, Error>;
