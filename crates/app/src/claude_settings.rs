//! Claude Code's permission settings, honoured as they are: the `permissions` key of
//! `~/.claude/settings.json` (the user's layer) and, once the project is trusted, of its
//! `.claude/settings.json` and `.claude/settings.local.json` (the project's layer). `allow`,
//! `ask` and `deny` join the rule layers of the same rank (the rule syntax is the same);
//! `additionalDirectories` become writable roots; `defaultMode` sets the approval mode
//! (`default`, `dontAsk`) or the permission mode (`plan`, `acceptEdits`) where neither a flag nor
//! config.toml does. `sandbox.network.allowedDomains` and `deniedDomains` join the managed
//! network's lists.
//!
//! Invariant: a project's file is read only when the project is trusted, so a cloned repository
//! cannot allow itself anything; a file that does not parse is a warning naming file and line,
//! never an error.

use std::path::{Path, PathBuf};

use codecoder_protocol::{ApprovalMode, PermissionMode};
use serde::Deserialize;

/// The `permissions` of one settings file.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionsJson {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    additional_directories: Vec<String>,
    default_mode: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct SettingsJson {
    #[serde(default)]
    permissions: PermissionsJson,
    #[serde(default)]
    sandbox: SandboxJson,
}

/// The `sandbox` of one settings file: only its network lists are read.
#[derive(Debug, Default, Deserialize)]
struct SandboxJson {
    #[serde(default)]
    network: SandboxNetworkJson,
}

/// `sandbox.network`: the hosts sandboxed commands reach without asking, and never.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SandboxNetworkJson {
    #[serde(default)]
    allowed_domains: Vec<String>,
    #[serde(default)]
    denied_domains: Vec<String>,
}

/// The rules of one layer, with the file they came from.
#[derive(Debug, Default)]
pub(crate) struct ClaudeRules {
    /// `allow` rules.
    pub(crate) allow: Vec<String>,
    /// `ask` rules.
    pub(crate) ask: Vec<String>,
    /// `deny` rules.
    pub(crate) deny: Vec<String>,
    /// The files read, for `doctor` and error messages.
    pub(crate) files: Vec<PathBuf>,
}

/// Claude Code's permission settings for a session.
#[derive(Debug, Default)]
pub(crate) struct ClaudePermissions {
    /// From a trusted project's `.claude/settings.json` and `.claude/settings.local.json`.
    pub(crate) project: ClaudeRules,
    /// From `~/.claude/settings.json`.
    pub(crate) user: ClaudeRules,
    /// `additionalDirectories`, absolute (relative ones against the project root).
    pub(crate) directories: Vec<PathBuf>,
    /// `defaultMode`, where it maps to one of ours (the project's wins over the user's).
    pub(crate) approval: Option<ApprovalMode>,
    /// `defaultMode` `plan` or `acceptEdits` (the project's wins over the user's).
    pub(crate) permission: Option<PermissionMode>,
    /// `sandbox.network.allowedDomains` of every file read, with the file each came from.
    pub(crate) allowed_domains: Vec<(String, PathBuf)>,
    /// `sandbox.network.deniedDomains` of every file read, with the file each came from.
    pub(crate) denied_domains: Vec<(String, PathBuf)>,
    /// Files that did not parse, modes codecoder does not take from a file.
    pub(crate) warnings: Vec<String>,
}

impl ClaudePermissions {
    /// Reads the user's file under `home` and, when `trusted`, the project's under `root`;
    /// `sources` (`user`, `project`, `local`) limits which, `None` reading all. `extra` is
    /// settings given on the command line (`--settings`), read last, as the user's.
    pub(crate) fn load(
        home: Option<&Path>,
        root: &Path,
        trusted: bool,
        sources: Option<&[String]>,
        extra: Option<&serde_json::Value>,
    ) -> Self {
        let wanted = |source: &str| sources.is_none_or(|s| s.iter().any(|w| w == source));
        let mut found = Self::default();
        if let Some(home) = home
            && wanted("user")
        {
            let path = home.join(".claude").join("settings.json");
            found.read(&path, false, root, home);
        }
        if trusted {
            for (source, name) in [("project", "settings.json"), ("local", "settings.local.json")] {
                if wanted(source) {
                    let path = root.join(".claude").join(name);
                    found.read(&path, true, root, home.unwrap_or(root));
                }
            }
        }
        if let Some(extra) = extra {
            let origin = Path::new("--settings");
            match serde_json::from_value::<SettingsJson>(extra.clone()) {
                Ok(settings) => found.apply(settings, origin, false, root, home.unwrap_or(root)),
                Err(err) => found.warnings.push(format!(
                    "--settings: not valid settings ({err}); its permissions are ignored"
                )),
            }
        }
        found
    }

    fn read(&mut self, path: &Path, project: bool, root: &Path, home: &Path) {
        let Ok(text) = fs_err::read_to_string(path) else { return };
        let settings: SettingsJson = match serde_json::from_str(&text) {
            Ok(settings) => settings,
            Err(err) => {
                self.warnings.push(format!(
                    "{}:{}:{}: not valid settings JSON ({err}); its permissions are ignored",
                    path.display(),
                    err.line(),
                    err.column()
                ));
                return;
            }
        };
        self.apply(settings, path, project, root, home);
    }

    fn apply(
        &mut self,
        settings: SettingsJson,
        path: &Path,
        project: bool,
        root: &Path,
        home: &Path,
    ) {
        let network = settings.sandbox.network;
        self.allowed_domains
            .extend(network.allowed_domains.into_iter().map(|d| (d, path.to_owned())));
        self.denied_domains
            .extend(network.denied_domains.into_iter().map(|d| (d, path.to_owned())));
        let permissions = settings.permissions;
        let layer = if project { &mut self.project } else { &mut self.user };
        layer.allow.extend(permissions.allow);
        layer.ask.extend(permissions.ask);
        layer.deny.extend(permissions.deny);
        layer.files.push(path.to_owned());
        for dir in permissions.additional_directories {
            let dir = match dir.strip_prefix("~/") {
                Some(rest) => home.join(rest),
                None => PathBuf::from(dir),
            };
            self.directories.push(if dir.is_absolute() { dir } else { root.join(dir) });
        }
        match permissions.default_mode.as_deref() {
            None => {}
            Some("default") if project || self.approval.is_none() => {
                self.approval = Some(ApprovalMode::OnRequest);
            }
            Some("dontAsk") if project || self.approval.is_none() => {
                self.approval = Some(ApprovalMode::Never);
            }
            Some("plan") if project || self.permission.is_none() => {
                self.permission = Some(PermissionMode::Plan);
            }
            Some("acceptEdits") if project || self.permission.is_none() => {
                self.permission = Some(PermissionMode::AcceptEdits);
            }
            Some("default" | "dontAsk" | "plan" | "acceptEdits") => {}
            Some(other) => self.warnings.push(format!(
                "{}: defaultMode `{other}` is not taken from a settings file (codecoder's modes: \
                 -a untrusted|on-request|never, --yolo)",
                path.display()
            )),
        }
    }
}

/// Adds `rules` to the `permissions.allow` of the Claude Code settings file that
/// `destination` names (`userSettings`: `~/.claude/settings.json`, `projectSettings`: the
/// project's `.claude/settings.json`, `localSettings`: its `.claude/settings.local.json`),
/// keeping everything else in it; an Agent SDK's "always allow". Returns the file written, or
/// `None` for a destination that is not a file (`session`, `cliArg`).
///
/// # Errors
/// A file that is not a JSON object, or that cannot be read or written.
pub fn persist_allow_rules(
    destination: &str,
    cwd: &Path,
    rules: &[String],
) -> Result<Option<PathBuf>, String> {
    let root = codecoder_config::project_root(cwd);
    let path = match destination {
        "userSettings" => {
            let Some(home) = std::env::var_os(codecoder_protocol::env::HOME) else {
                return Err("HOME is not set: no user settings file".to_owned());
            };
            PathBuf::from(home).join(".claude").join("settings.json")
        }
        "projectSettings" => root.join(".claude").join("settings.json"),
        "localSettings" => root.join(".claude").join("settings.local.json"),
        _ => return Ok(None),
    };
    let mut settings = match fs_err::read_to_string(&path) {
        Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
            .map_err(|err| format!("{}:{}: {err}", path.display(), err.line()))?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => serde_json::json!({}),
        Err(err) => return Err(err.to_string()),
    };
    let Some(object) = settings.as_object_mut() else {
        return Err(format!("{}: not a JSON object", path.display()));
    };
    let permissions = object.entry("permissions").or_insert_with(|| serde_json::json!({}));
    let Some(permissions) = permissions.as_object_mut() else {
        return Err(format!("{}: `permissions` is not an object", path.display()));
    };
    let allow = permissions.entry("allow").or_insert_with(|| serde_json::json!([]));
    let Some(allow) = allow.as_array_mut() else {
        return Err(format!("{}: `permissions.allow` is not a list", path.display()));
    };
    for rule in rules {
        if !allow.iter().any(|known| known.as_str() == Some(rule)) {
            allow.push(serde_json::json!(rule));
        }
    }
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir).map_err(|err| err.to_string())?;
    }
    let mut text = serde_json::to_string_pretty(&settings).map_err(|err| err.to_string())?;
    text.push('\n');
    // Replaced whole, so a reader never sees half a file.
    let temporary = path.with_extension("json.tmp");
    fs_err::write(&temporary, text).map_err(|err| err.to_string())?;
    fs_err::rename(&temporary, &path).map_err(|err| err.to_string())?;
    Ok(Some(path))
}
