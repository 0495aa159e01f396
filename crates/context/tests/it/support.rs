//! Test support: a temp project (a codecoder home and a git repository), a file reader that
//! counts reads, builders with a fixed clock, and requests serialized for prefix comparison.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use codecoder_context::{
    AgentsMdLoader, ContextBuilder, ContextConfig, DocSource, Environment, FileSystem,
};
use codecoder_kernel::{ModelRequest, ToolSpec};
use codecoder_stdx::ManualClock;
use serde_json::json;

/// 2026-11-30 09:00:00 UTC.
pub(crate) const START_MS: u64 = 1_796_029_200_000;

/// A temp dir holding `home/` (the codecoder home) and `repo/` (a git repository on `main`).
pub(crate) struct Project {
    pub(crate) dir: tempfile::TempDir,
}

impl Project {
    pub(crate) fn new() -> Self {
        let project = Self { dir: tempfile::tempdir().unwrap() };
        fs_err::create_dir_all(project.home()).unwrap();
        project.write("repo/.git/HEAD", "ref: refs/heads/main\n");
        project
    }

    pub(crate) fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.path("home")
    }

    pub(crate) fn repo(&self) -> PathBuf {
        self.path("repo")
    }

    /// Writes `text` to `relative` (under the temp dir), creating directories.
    pub(crate) fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path(relative);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(&path, text).unwrap();
        path
    }

    pub(crate) fn mkdir(&self, relative: &str) -> PathBuf {
        let path = self.path(relative);
        fs_err::create_dir_all(&path).unwrap();
        path
    }

    /// A 128k window with an 8k reserve, AGENTS.md from `home/`.
    pub(crate) fn config(&self) -> ContextConfig {
        ContextConfig::standard(128_000, 8_000, Some(self.home()))
    }

    /// A builder for `cwd` with `config`, the clock at `START_MS`.
    pub(crate) fn builder(&self, cwd: &Path, config: &ContextConfig) -> ContextBuilder {
        self.try_builder(cwd, config).unwrap()
    }

    pub(crate) fn try_builder(
        &self,
        cwd: &Path,
        config: &ContextConfig,
    ) -> codecoder_context::Result<ContextBuilder> {
        let environment = Environment::new(cwd, Some("/bin/zsh".to_owned()));
        ContextBuilder::new(
            config,
            &environment,
            &ManualClock::new(START_MS, 0),
            &AgentsMdLoader::new(),
        )
    }
}

/// Sets a file's modification time to `secs` after the epoch.
pub(crate) fn set_mtime(path: &Path, secs: u64) {
    let file = fs_err::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)).unwrap();
}

/// The real file system, counting reads.
#[derive(Clone, Default)]
pub(crate) struct CountingSource {
    pub(crate) reads: Arc<AtomicUsize>,
}

impl CountingSource {
    pub(crate) fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
}

impl DocSource for CountingSource {
    fn modified(&self, path: &Path) -> codecoder_context::Result<Option<SystemTime>> {
        FileSystem.modified(path)
    }

    fn read(&self, path: &Path) -> codecoder_context::Result<String> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        FileSystem.read(path)
    }
}

/// Two tools, as a registry would give them.
pub(crate) fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".to_owned(),
            description: "Reads a file.".to_owned(),
            schema: json!({ "type": "object", "properties": { "path": { "type": "string" } } }),
        },
        ToolSpec {
            name: "apply_patch".to_owned(),
            description: "Applies a patch.".to_owned(),
            schema: json!({ "type": "object", "properties": { "patch": { "type": "string" } } }),
        },
    ]
}

/// A request as the bytes a provider body would hold, in order: model, instructions, tools,
/// then the history messages. Left open after the last message, so a request that extends
/// another serializes to a string that extends the other's.
pub(crate) fn open_body(request: &ModelRequest) -> String {
    let tools: Vec<serde_json::Value> = request
        .tools
        .iter()
        .map(|tool| json!({ "name": tool.name, "description": tool.description, "parameters": tool.schema }))
        .collect();
    let mut body = format!(
        "{{\"model\":{},\"instructions\":{},\"tools\":{},\"input\":[",
        serde_json::to_string(&request.model).unwrap(),
        serde_json::to_string(&request.instructions).unwrap(),
        serde_json::to_string(&tools).unwrap(),
    );
    for message in &request.history {
        body.push_str(&serde_json::to_string(&**message).unwrap());
        body.push(',');
    }
    body
}

/// Asserts each request extends the one before: same instructions and tools, the earlier
/// history a prefix of the later, and the serialized body a byte prefix.
pub(crate) fn assert_prefix_stable(requests: &[ModelRequest]) {
    for pair in requests.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert_eq!(before.instructions, after.instructions, "instructions changed");
        assert_eq!(before.tools, after.tools, "tools changed");
        let n = before.history.len();
        assert!(after.history.len() > n, "history did not grow");
        assert_eq!(before.history[..], after.history[..n], "history prefix changed");
        let (before_body, after_body) = (open_body(before), open_body(after));
        assert!(
            after_body.starts_with(&before_body),
            "request body is not a byte-prefix extension of the previous one"
        );
    }
}

/// Messages as the kernel shares them.
pub(crate) fn arcs(
    messages: &[codecoder_protocol::Message],
) -> Vec<std::sync::Arc<codecoder_protocol::Message>> {
    messages.iter().cloned().map(std::sync::Arc::new).collect()
}
