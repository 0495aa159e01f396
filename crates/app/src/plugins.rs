//! Claude Code plugins: directories with `.claude-plugin/plugin.json` that the user added with
//! `codecoder plugin add`, recorded in `$CODECODER_HOME/plugins.json`. An enabled plugin adds
//! its `commands/`, `agents/` and `skills/` (named `plugin:thing`), its `hooks/hooks.json` and its
//! `.mcp.json`, plus the paths its manifest names for them.
//!
//! Invariants: only plugins recorded in `plugins.json` load (a plugin's hooks run code); the
//! file is replaced atomically; a recorded plugin whose directory went missing is skipped.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The registry file under `$CODECODER_HOME`.
const FILE: &str = "plugins.json";

/// One recorded plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plugin {
    /// The plugin's `name` from its manifest.
    pub name: String,
    /// The plugin's directory (absolute).
    pub dir: PathBuf,
    /// Whether its components load.
    pub enabled: bool,
    /// The manifest's `description`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The manifest's `version`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Registry {
    #[serde(default)]
    plugins: Vec<Plugin>,
}

/// The manifest fields we read.
#[derive(Debug, Deserialize)]
struct Manifest {
    name: Option<String>,
    description: Option<String>,
    version: Option<String>,
}

fn registry_path(home: &Path) -> PathBuf {
    home.join(FILE)
}

fn read(home: &Path) -> Result<Registry> {
    let path = registry_path(home);
    match fs_err::read_to_string(&path) {
        Ok(text) => parse(&path, &text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Registry::default()),
        Err(err) => Err(Error::io(format!("reading {}", path.display()))(err)),
    }
}

fn parse(path: &Path, text: &str) -> Result<Registry> {
    if text.trim().is_empty() {
        return Ok(Registry::default());
    }
    serde_json::from_str(text).map_err(|err| {
        Error::usage(format!(
            "{}:{}:{}: not a plugin list: {err}",
            path.display(),
            err.line(),
            err.column()
        ))
    })
}

/// Edits the plugin list under its lock (another codecoder process editing it waits); `edit`
/// says whether it changed anything, and only a change is written.
fn edit<T>(home: &Path, edit: impl FnOnce(&mut Registry) -> Result<(bool, T)>) -> Result<T> {
    let path = registry_path(home);
    let file = codecoder_config::HomeFile::lock(&path)
        .map_err(Error::io(format!("locking {}", path.display())))?;
    let text = file.read().map_err(Error::io(format!("reading {}", path.display())))?;
    let mut registry = parse(&path, &text)?;
    let (changed, answer) = edit(&mut registry)?;
    if changed {
        let mut text = serde_json::to_string_pretty(&registry)
            .map_err(|err| Error::usage(format!("encoding the plugin list: {err}")))?;
        text.push('\n');
        file.write(&text).map_err(Error::io(format!("writing {}", path.display())))?;
    }
    Ok(answer)
}

/// Reads and checks `dir/.claude-plugin/plugin.json`: a `name` of lowercase letters, digits and
/// hyphens.
pub fn read_manifest(dir: &Path) -> Result<Plugin> {
    let dir = fs_err::canonicalize(dir).map_err(Error::io(format!("opening {}", dir.display())))?;
    let path = dir.join(".claude-plugin").join("plugin.json");
    let text = fs_err::read_to_string(&path).map_err(|err| {
        Error::usage(format!("{} is not a plugin: no {} ({err})", dir.display(), path.display()))
    })?;
    let manifest: Manifest = serde_json::from_str(&text)
        .map_err(|err| Error::usage(format!("{}: {err}", path.display())))?;
    let name = manifest
        .name
        .ok_or_else(|| Error::usage(format!("{}: `name` is required", path.display())))?;
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(Error::usage(format!(
            "{}: `name` {name:?} must be lowercase letters, digits and hyphens",
            path.display()
        )));
    }
    Ok(Plugin {
        name,
        dir,
        enabled: true,
        description: manifest.description,
        version: manifest.version,
    })
}

/// Records the plugin in `dir` (enabled), replacing one of the same name. Returns it.
pub fn add_plugin(home: &Path, dir: &Path) -> Result<Plugin> {
    let plugin = read_manifest(dir)?;
    edit(home, |registry| {
        registry.plugins.retain(|known| known.name != plugin.name);
        registry.plugins.push(plugin.clone());
        Ok((true, ()))
    })?;
    Ok(plugin)
}

/// Every recorded plugin, in the order added.
pub fn list_plugins(home: &Path) -> Result<Vec<Plugin>> {
    Ok(read(home)?.plugins)
}

/// Forgets the plugin `name`; false when there is none.
pub fn remove_plugin(home: &Path, name: &str) -> Result<bool> {
    edit(home, |registry| {
        let before = registry.plugins.len();
        registry.plugins.retain(|known| known.name != name);
        let removed = registry.plugins.len() != before;
        Ok((removed, removed))
    })
}

/// Enables or disables the plugin `name`; false when there is none.
pub fn set_plugin_enabled(home: &Path, name: &str, enabled: bool) -> Result<bool> {
    edit(home, |registry| {
        let Some(plugin) = registry.plugins.iter_mut().find(|known| known.name == name) else {
            return Ok((false, false));
        };
        plugin.enabled = enabled;
        Ok((true, true))
    })
}

/// The paths the manifest of the plugin in `dir` gives under `key` (`commands`, `agents`,
/// `hooks`, `mcpServers`): a string or a list of strings, relative to `dir`, which add to the
/// default locations. A path leaving `dir`, or an inline object, is a warning.
pub(crate) fn component_paths(dir: &Path, key: &str, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let path = dir.join(".claude-plugin").join("plugin.json");
    let Ok(text) = fs_err::read_to_string(&path) else { return Vec::new() };
    let Ok(manifest) = serde_json::from_str::<serde_json::Value>(&text) else { return Vec::new() };
    let values: Vec<&serde_json::Value> = match manifest.get(key) {
        None | Some(serde_json::Value::Null) => return Vec::new(),
        Some(serde_json::Value::Array(list)) => list.iter().collect(),
        Some(value) => vec![value],
    };
    let mut paths = Vec::new();
    for value in values {
        let relative = value.as_str().map(Path::new);
        let inside = relative.is_some_and(|relative| {
            relative.components().all(|part| {
                matches!(part, std::path::Component::Normal(_) | std::path::Component::CurDir)
            })
        });
        match relative {
            Some(relative) if inside => paths.push(dir.join(relative)),
            _ => warnings.push(format!(
                "{}: `{key}` entry {value} is not a path inside the plugin; ignored",
                path.display()
            )),
        }
    }
    paths
}

/// The enabled plugins whose directories exist. An unreadable list is a warning.
pub(crate) fn enabled(home: &Path, warnings: &mut Vec<String>) -> Vec<Plugin> {
    match read(home) {
        Ok(registry) => registry
            .plugins
            .into_iter()
            .filter(|plugin| plugin.enabled)
            .filter(|plugin| {
                let exists = plugin.dir.is_dir();
                if !exists {
                    warnings.push(format!(
                        "plugin `{}`: {} is missing; skipped",
                        plugin.name,
                        plugin.dir.display()
                    ));
                }
                exists
            })
            .collect(),
        Err(err) => {
            warnings.push(err.to_string());
            Vec::new()
        }
    }
}
