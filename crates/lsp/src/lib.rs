//! Code intelligence (issue 29, points 2 and 3): language servers started lazily over stdio,
//! their diagnostics added to the result of each edit, the `lsp` tool (definition, references,
//! hover, symbols, implementation, call hierarchy), and formatters run after edits.
//!
//! A [`CodeIntel`] belongs to one session. A server starts on the first file of its language
//! (by extension) whose configured binary is on `PATH` (never downloaded) that a tool reads,
//! searches ([`CodeIntel::touch`]) or edits, in the directory the nearest root marker names
//! (else the session's directory), spawned through the sandbox with the session's
//! confinement; it stops when the `CodeIntel` is dropped. Starting is in the background: the
//! read that starts a server does not wait for it, so the usual read-then-edit finds it warm.
//!
//! Invariants:
//! - Nothing here fails an edit: a server that is missing, exits, or does not answer becomes a
//!   note in the result ([`CodeIntel::after_edit`]). Every wait has a deadline.
//! - The wait an edit adds for diagnostics is at most `diagnostics_wait`, start-up included: a
//!   server still starting at that bound is noted (its diagnostics follow later edits) and
//!   goes on starting.
//! - A file no server and no formatter is configured for costs nothing: no process, no wait.
//! - A server that failed to start is not retried in the same session (its note says why).
//! - Positions the model sees and gives are 1-based lines and columns (characters); the wire's
//!   0-based UTF-16 positions are converted here.

mod client;
mod format;
mod framing;
mod tool;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codecoder_sandbox::SpawnConfig;
use serde_json::Value;

use crate::client::{Client, Spawner};
pub use crate::format::FormatterConfig;
pub use crate::tool::LspTool;

/// The lsp crate's error (internal to a session: callers see notes, not errors).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server's process could not be started.
    #[error("{server} could not be started: {source}")]
    Spawn {
        /// The server's name.
        server: String,
        /// Why.
        source: codecoder_sandbox::Error,
    },
    /// A thread could not be started.
    #[error("could not start a thread: {0}")]
    Thread(std::io::Error),
    /// The server exited (or closed its output).
    #[error("{server} exited")]
    Exited {
        /// The server's name.
        server: String,
    },
    /// The server did not answer in time.
    #[error("{server} did not answer {method} within {millis} ms")]
    Timeout {
        /// The server's name.
        server: String,
        /// The request.
        method: String,
        /// The deadline.
        millis: u64,
    },
    /// The server answered with an error.
    #[error("{server} answered {method} with an error: {message}")]
    Response {
        /// The server's name.
        server: String,
        /// The request.
        method: String,
        /// The server's message.
        message: String,
    },
    /// A lock was poisoned by a panic elsewhere.
    #[error("internal state lost to a panic")]
    Poisoned,
}

/// The lsp crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// One language server (`[lsp.NAME]`, or a preset).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Its name (the table's key).
    pub name: String,
    /// The program (looked up in `PATH`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// File extensions it serves, without the dot.
    pub extensions: Vec<String>,
    /// Files or directories whose nearest ancestor holding one is the server's root.
    pub root_markers: Vec<String>,
    /// Variables set for it.
    pub env: Vec<(String, String)>,
    /// Sent as `initializationOptions`.
    pub initialization_options: Option<Value>,
    /// Whether the person configured it (a missing configured server is noted; a missing
    /// preset is skipped silently).
    pub configured: bool,
}

impl ServerConfig {
    fn preset(
        name: &str,
        command: &str,
        args: &[&str],
        extensions: &[&str],
        markers: &[&str],
    ) -> Self {
        Self {
            name: name.to_owned(),
            command: command.to_owned(),
            args: args.iter().map(|&arg| arg.to_owned()).collect(),
            extensions: extensions.iter().map(|&ext| ext.to_owned()).collect(),
            root_markers: markers.iter().map(|&marker| marker.to_owned()).collect(),
            env: Vec::new(),
            initialization_options: None,
            configured: false,
        }
    }

    fn serves(&self, path: &Path) -> bool {
        path.extension()
            .and_then(|ext| ext.to_str())
            .is_some_and(|ext| self.extensions.iter().any(|served| served == ext))
    }
}

/// The built-in servers, in the order they are tried for a file: rust-analyzer, pyright,
/// basedpyright, pylsp, typescript-language-server, gopls, clangd.
pub fn presets() -> Vec<ServerConfig> {
    let python_markers = ["pyproject.toml", "setup.py", "setup.cfg", "pyrightconfig.json", ".git"];
    vec![
        ServerConfig::preset(
            "rust-analyzer",
            "rust-analyzer",
            &[],
            &["rs"],
            &["Cargo.toml", ".git"],
        ),
        ServerConfig::preset(
            "pyright",
            "pyright-langserver",
            &["--stdio"],
            &["py", "pyi"],
            &python_markers,
        ),
        ServerConfig::preset(
            "basedpyright",
            "basedpyright-langserver",
            &["--stdio"],
            &["py", "pyi"],
            &python_markers,
        ),
        ServerConfig::preset("pylsp", "pylsp", &[], &["py"], &python_markers),
        ServerConfig::preset(
            "typescript-language-server",
            "typescript-language-server",
            &["--stdio"],
            &["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"],
            &["tsconfig.json", "jsconfig.json", "package.json", ".git"],
        ),
        ServerConfig::preset("gopls", "gopls", &[], &["go"], &["go.mod", "go.work", ".git"]),
        ServerConfig::preset(
            "clangd",
            "clangd",
            &[],
            &["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx"],
            &["compile_commands.json", "compile_flags.txt", ".clangd", ".git"],
        ),
    ]
}

/// A session's code-intelligence settings. No `Default`: build it with [`LspConfig::standard`].
#[derive(Debug, Clone)]
pub struct LspConfig {
    /// The session's directory: the root when no marker is found, relative paths' base.
    pub cwd: PathBuf,
    /// The servers, in the order they are tried for a file (the first whose binary is found
    /// serves it).
    pub servers: Vec<ServerConfig>,
    /// Formatters run after an edit, before diagnostics are asked for.
    pub formatters: Vec<FormatterConfig>,
    /// The most an edit waits for the servers' diagnostics, a server's start-up included.
    /// Default 1 s.
    pub diagnostics_wait: Duration,
    /// How long a server may take to answer `initialize` (in the background) before it is
    /// taken for hung, killed and noted. Default 10 s.
    pub start_timeout: Duration,
    /// How long the `lsp` tool waits for an answer. Default 10 s.
    pub request_timeout: Duration,
    /// Diagnostics shown per edit (errors first). Default 20.
    pub max_diagnostics: usize,
    /// How servers and formatters are spawned (confinement, environment).
    pub spawn: SpawnConfig,
    /// The `PATH` binaries are looked up in (default: this process's).
    pub path: Option<OsString>,
}

impl LspConfig {
    /// The presets, no formatters, the defaults listed on each field, unconfined.
    pub fn standard(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            servers: presets(),
            formatters: Vec::new(),
            diagnostics_wait: Duration::from_secs(1),
            start_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(10),
            max_diagnostics: 20,
            spawn: SpawnConfig::standard(),
            path: std::env::var_os("PATH"),
        }
    }
}

/// Where a server stands, for `doctor` and the notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Its binary is on `PATH` (the full path); not started yet.
    Available(PathBuf),
    /// Its binary is not on `PATH`.
    Missing,
    /// Started, not answering `initialize` yet.
    Starting,
    /// Running.
    Running,
    /// It failed (to start, or later): why.
    Failed(String),
}

enum Slot {
    Running(Arc<Client>),
    Failed(String),
}

/// One session's language servers and formatters.
pub struct CodeIntel {
    config: LspConfig,
    /// Servers by (name, root). Held only to look up or insert; a start runs under it, bounded
    /// by `start_timeout`, so that two edits of the same language start one server.
    slots: Mutex<HashMap<(String, PathBuf), Slot>>,
    /// Started with the first server (a session with none has no thread for it).
    spawner: Mutex<Option<Spawner>>,
}

impl std::fmt::Debug for CodeIntel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeIntel")
            .field("servers", &self.config.servers.len())
            .finish_non_exhaustive()
    }
}

impl CodeIntel {
    /// A session's code intelligence; starts nothing.
    pub fn new(config: LspConfig) -> Self {
        Self { config, slots: Mutex::new(HashMap::new()), spawner: Mutex::new(None) }
    }

    /// The settings.
    pub fn config(&self) -> &LspConfig {
        &self.config
    }

    /// Each configured server with its state (doctor's list).
    pub fn states(&self) -> Vec<(ServerConfig, ServerState)> {
        let slots = self.slots.lock().ok();
        self.config
            .servers
            .iter()
            .map(|server| {
                let slot = slots.as_ref().and_then(|slots| {
                    slots.iter().find(|((name, _), _)| *name == server.name).map(|(_, slot)| slot)
                });
                let state = match slot {
                    Some(Slot::Running(client)) => match client.start_failure() {
                        Some(why) => ServerState::Failed(why.to_string()),
                        None if client.is_dead() => {
                            ServerState::Failed(format!("{} exited", server.name))
                        }
                        None if client.is_ready() => ServerState::Running,
                        None => ServerState::Starting,
                    },
                    Some(Slot::Failed(why)) => ServerState::Failed(why.clone()),
                    None => match self.find(&server.command) {
                        Some(path) => ServerState::Available(path),
                        None => ServerState::Missing,
                    },
                };
                (server.clone(), state)
            })
            .collect()
    }

    /// Whether any server's binary is on `PATH` (the `lsp` tool is offered only then).
    pub fn any_available(&self) -> bool {
        self.config.servers.iter().any(|server| self.find(&server.command).is_some())
    }

    /// The program's full path, looked up in the configured `PATH` (a path with a slash is
    /// taken as it is, when it exists).
    fn find(&self, command: &str) -> Option<PathBuf> {
        if command.contains('/') {
            let path = PathBuf::from(command);
            return path.is_file().then_some(path);
        }
        let path = self.config.path.as_ref()?;
        std::env::split_paths(path)
            .map(|dir| dir.join(command))
            .find(|candidate| is_executable(candidate))
            .filter(|found| !is_idle_rustup_proxy(found, command, rustup_home().as_deref()))
    }
}

/// rustup's home: `RUSTUP_HOME`, else `~/.rustup`.
fn rustup_home() -> Option<PathBuf> {
    std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".rustup")))
}

/// Whether `found` is rustup's proxy for `command` (a link to `rustup`) while no toolchain
/// under `rustup_home` has the component: the proxy would only print an error and exit.
pub(crate) fn is_idle_rustup_proxy(
    found: &Path,
    command: &str,
    rustup_home: Option<&Path>,
) -> bool {
    let Ok(target) = fs_err::read_link(found) else { return false };
    if target.file_name().is_none_or(|name| name != "rustup") {
        return false;
    }
    let Some(toolchains) = rustup_home.map(|home| home.join("toolchains")) else { return false };
    let Ok(entries) = fs_err::read_dir(&toolchains) else { return true };
    !entries.flatten().any(|toolchain| is_executable(&toolchain.path().join("bin").join(command)))
}

impl CodeIntel {
    /// The server for `path`: the first configured for its extension whose binary is found.
    /// `Ok(None)`: none is configured or found (no note for an absent preset).
    fn server_for(
        &self,
        path: &Path,
    ) -> std::result::Result<Option<(ServerConfig, PathBuf)>, String> {
        let mut missing = Vec::new();
        for server in self.config.servers.iter().filter(|server| server.serves(path)) {
            match self.find(&server.command) {
                Some(binary) => return Ok(Some((server.clone(), binary))),
                None if server.configured => {
                    missing.push(format!("{} (`{}` is not on PATH)", server.name, server.command))
                }
                None => {}
            }
        }
        if missing.is_empty() { Ok(None) } else { Err(missing.join(", ")) }
    }

    /// The client for `server` at `path`'s root, started (in the background) when needed: it
    /// may still be starting. A server that did not start is left failed, with why.
    fn client(
        &self,
        server: &ServerConfig,
        binary: &Path,
        path: &Path,
    ) -> std::result::Result<Arc<Client>, String> {
        let root = root_of(path, &server.root_markers, &self.config.cwd);
        let key = (server.name.clone(), root.clone());
        let mut slots = self.slots.lock().map_err(|_| Error::Poisoned.to_string())?;
        match slots.get(&key) {
            Some(Slot::Running(client)) => {
                let why = match client.start_failure() {
                    Some(failure) => format!("{} did not start: {failure}", server.name),
                    None if !client.is_dead() => return Ok(Arc::clone(client)),
                    None => format!("{} exited; it is not restarted in this session", server.name),
                };
                slots.insert(key, Slot::Failed(why.clone()));
                return Err(why);
            }
            Some(Slot::Failed(why)) => return Err(why.clone()),
            None => {}
        }
        let mut resolved = server.clone();
        resolved.command = binary.to_string_lossy().into_owned();
        let mut spawner = self.spawner.lock().map_err(|_| Error::Poisoned.to_string())?;
        if spawner.is_none() {
            let started = Spawner::start(self.config.spawn.clone())
                .map_err(|err| format!("{} did not start: {}", server.name, Error::Thread(err)))?;
            *spawner = Some(started);
        }
        let Some(spawner) = spawner.as_ref() else { return Err(Error::Poisoned.to_string()) };
        match Client::start(&resolved, &root, spawner, self.config.start_timeout) {
            Ok(client) => {
                let client = Arc::new(client);
                slots.insert(key, Slot::Running(Arc::clone(&client)));
                Ok(client)
            }
            Err(err) => {
                let why = format!("{} did not start: {err}", server.name);
                slots.insert(key, Slot::Failed(why.clone()));
                Err(why)
            }
        }
    }

    /// Starts, in the background, the servers of files a tool read or found (`paths`, absolute),
    /// so that an edit that follows finds them warm. A file read (`open`) is also opened on its
    /// server, whose first analysis (the standard library's stubs, the project's index) then
    /// runs before the edit. Returns at once; a file no server serves costs a look at its
    /// extension.
    pub fn touch(&self, paths: &[PathBuf], open: bool) {
        // A search's many files of one language (and root) cost one look-up.
        let mut seen: Vec<(&std::ffi::OsStr, &Path)> = Vec::new();
        for path in paths {
            if !self.config.servers.iter().any(|server| server.serves(path)) {
                continue;
            }
            if let (Some(ext), Some(dir)) = (path.extension(), path.parent()) {
                if !open && seen.contains(&(ext, dir)) {
                    continue;
                }
                seen.push((ext, dir));
            }
            let Ok(Some((server, binary))) = self.server_for(path) else { continue };
            let Ok(client) = self.client(&server, &binary, path) else { continue };
            if open
                && !client.is_open(path)
                && small_enough(path)
                && let Ok(text) = fs_err::read_to_string(path)
            {
                client.sync(path, language_id(path), &text);
            }
        }
    }

    /// Runs the formatters, then collects the servers' diagnostics for the files an edit
    /// changed (absolute paths; missing files are skipped). Returns the text to add to the
    /// edit's result, empty when there is nothing to say. Never fails; the diagnostics' wait
    /// ends at `diagnostics_wait` after the formatters, for all the files together.
    pub fn after_edit(&self, paths: &[PathBuf]) -> String {
        let mut sections = Vec::new();
        for path in paths {
            if !path.is_file() {
                continue;
            }
            if let Some(note) = format::run_formatters(&self.config, path) {
                sections.push(note);
            }
        }
        let deadline = Instant::now() + self.config.diagnostics_wait;
        // Every file is synced before any is waited for, so that their analyses overlap.
        let synced: Vec<std::result::Result<Pending, String>> = paths
            .iter()
            .filter(|path| path.is_file())
            .filter_map(|path| self.sync_for_diagnostics(path).transpose())
            .collect();
        for pending in synced {
            match pending {
                Ok(pending) => sections.push(self.await_diagnostics(&pending, deadline)),
                Err(note) => sections.push(note),
            }
        }
        sections.join("\n")
    }

    /// Gives one changed file to its server. `Ok(None)`: no server serves it; `Err`: a note on
    /// why there will be no diagnostics.
    fn sync_for_diagnostics(&self, path: &Path) -> std::result::Result<Option<Pending>, String> {
        let shown = shown_path(&self.config.cwd, path);
        let (server, binary) = match self.server_for(path) {
            Ok(Some(found)) => found,
            Ok(None) => return Ok(None),
            Err(missing) => return Err(format!("Diagnostics for {shown}: no server ({missing}).")),
        };
        let client = self
            .client(&server, &binary, path)
            .map_err(|why| format!("Diagnostics for {shown}: unavailable ({why})."))?;
        let text = fs_err::read_to_string(path)
            .map_err(|err| format!("Diagnostics for {shown}: unavailable ({err})."))?;
        let before = client.generation(path);
        let version = client.sync(path, language_id(path), &text);
        Ok(Some(Pending { path: path.to_path_buf(), shown, server, client, before, version }))
    }

    /// Waits until `deadline` for the diagnostics of one synced file; the text to show.
    fn await_diagnostics(&self, pending: &Pending, deadline: Instant) -> String {
        let Pending { path, shown, server, client, before, version } = pending;
        if let Some(published) = client.wait_published(path, *before, *version, deadline) {
            return render_diagnostics(
                shown,
                client.name(),
                &published.diagnostics,
                self.config.max_diagnostics,
            );
        }
        if let Some(failure) = client.start_failure() {
            // Marks the slot failed (and drops the server) for the next edit; the note says why.
            let why = format!("{} did not start: {failure}", client.name());
            if let Ok(mut slots) = self.slots.lock() {
                let root = root_of(path, &server.root_markers, &self.config.cwd);
                slots.insert((server.name.clone(), root), Slot::Failed(why.clone()));
            }
            return format!("Diagnostics for {shown}: unavailable ({why}).");
        }
        if client.is_dead() {
            return format!("Diagnostics for {shown}: unavailable ({} exited).", client.name());
        }
        // Not answering `initialize` yet, or in its first analysis (it published nothing yet).
        if !client.is_ready() || !client.has_published() {
            return format!(
                "Diagnostics for {shown}: {} is starting; its diagnostics come with later edits.",
                client.name()
            );
        }
        format!(
            "Diagnostics for {shown}: {} published none within {} ms.",
            client.name(),
            self.config.diagnostics_wait.as_millis()
        )
    }

    /// A running client for the `lsp` tool: the server of `path`, or any running one (else the
    /// first available, rooted at the session's directory).
    fn client_for_tool(&self, path: Option<&Path>) -> std::result::Result<Arc<Client>, String> {
        if let Some(path) = path {
            return match self.server_for(path)? {
                Some((server, binary)) => self.client(&server, &binary, path),
                None => Err(format!(
                    "no language server is configured and installed for {}",
                    shown_path(&self.config.cwd, path)
                )),
            };
        }
        if let Ok(slots) = self.slots.lock()
            && let Some(client) = slots.values().find_map(|slot| match slot {
                Slot::Running(client) if !client.is_dead() => Some(Arc::clone(client)),
                Slot::Running(_) | Slot::Failed(_) => None,
            })
        {
            return Ok(client);
        }
        let cwd = self.config.cwd.clone();
        for server in &self.config.servers {
            if let Some(binary) = self.find(&server.command) {
                return self.client(server, &binary, &cwd.join("."));
            }
        }
        Err("no language server is installed".to_owned())
    }
}

/// A changed file given to its server, its diagnostics awaited.
struct Pending {
    path: PathBuf,
    shown: String,
    server: ServerConfig,
    client: Arc<Client>,
    /// The generation of its last publish before the change.
    before: u64,
    /// The version sent.
    version: i64,
}

/// Files larger than this are not opened on a server when merely read (a generated file, a
/// data dump): the server still starts.
const OPEN_ON_READ_LIMIT: u64 = 1024 * 1024;

fn small_enough(path: &Path) -> bool {
    fs_err::metadata(path).is_ok_and(|meta| meta.len() <= OPEN_ON_READ_LIMIT)
}

/// A diagnostic's severity name (LSP: 1 error, 2 warning, 3 information, 4 hint; absent is
/// taken as an error, as editors do).
fn severity(diagnostic: &Value) -> (u64, &'static str) {
    match diagnostic.get("severity").and_then(Value::as_u64).unwrap_or(1) {
        1 => (1, "error"),
        2 => (2, "warning"),
        3 => (3, "info"),
        _ => (4, "hint"),
    }
}

/// The diagnostics as the model reads them: a count line, then one line each, errors first,
/// at most `max`.
pub(crate) fn render_diagnostics(
    shown: &str,
    server: &str,
    diagnostics: &[Value],
    max: usize,
) -> String {
    if diagnostics.is_empty() {
        return format!("Diagnostics for {shown} ({server}): none.");
    }
    let mut sorted: Vec<&Value> = diagnostics.iter().collect();
    sorted.sort_by_key(|diagnostic| {
        let line = diagnostic.pointer("/range/start/line").and_then(Value::as_u64).unwrap_or(0);
        (severity(diagnostic).0, line)
    });
    let errors = sorted.iter().filter(|diagnostic| severity(diagnostic).0 == 1).count();
    let others = sorted.len() - errors;
    let mut text =
        format!("Diagnostics for {shown} ({server}): {errors} error(s), {others} other(s)");
    for diagnostic in sorted.iter().take(max) {
        let line = diagnostic.pointer("/range/start/line").and_then(Value::as_u64).unwrap_or(0) + 1;
        let column =
            diagnostic.pointer("/range/start/character").and_then(Value::as_u64).unwrap_or(0) + 1;
        let message =
            diagnostic.get("message").and_then(Value::as_str).unwrap_or("").replace('\n', " ");
        let code = match diagnostic.get("code") {
            Some(Value::String(code)) => format!(" [{code}]"),
            Some(Value::Number(code)) => format!(" [{code}]"),
            _ => String::new(),
        };
        text.push_str(&format!(
            "\n  {shown}:{line}:{column}: {}: {message}{code}",
            severity(diagnostic).1
        ));
    }
    if sorted.len() > max {
        text.push_str(&format!("\n  … and {} more", sorted.len() - max));
    }
    text
}

/// The directory of `path`'s nearest ancestor holding one of `markers`, else `fallback`.
fn root_of(path: &Path, markers: &[String], fallback: &Path) -> PathBuf {
    for dir in path.ancestors().skip(1) {
        if markers.iter().any(|marker| dir.join(marker).exists()) {
            return dir.to_path_buf();
        }
    }
    fallback.to_path_buf()
}

/// The LSP language id for a file, by extension.
fn language_id(path: &Path) -> &'static str {
    match path.extension().and_then(|ext| ext.to_str()).unwrap_or("") {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        _ => "plaintext",
    }
}

/// `path` relative to `cwd` when below it.
pub(crate) fn shown_path(cwd: &Path, path: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).to_string_lossy().into_owned()
}

/// A `file://` URI for an absolute path (bytes outside the unreserved set percent-encoded).
pub(crate) fn path_to_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                uri.push(char::from(byte));
            }
            _ => uri.push_str(&format!("%{byte:02X}")),
        }
    }
    uri
}

/// The path of a `file://` URI (percent-decoded); `None` for another scheme.
pub(crate) fn uri_to_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let bytes = rest.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && let Some(hex) = rest.get(index + 1..index + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            decoded.push(byte);
            index += 3;
            continue;
        }
        decoded.push(bytes[index]);
        index += 1;
    }
    Some(PathBuf::from(String::from_utf8_lossy(&decoded).into_owned()))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests;
