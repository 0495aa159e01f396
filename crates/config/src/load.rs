//! Reading and merging the layers.
//!
//! Each layer is parsed into a TOML table and checked against `ConfigToml` on its own, so
//! errors name the layer's file and line. Tables then merge key by key (a later layer's value
//! replaces an earlier one's; tables merge recursively), and `origins` remembers, for every
//! leaf's dotted path, the layer that set it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::{Table, Value};

use crate::error::{Error, Result, closest, unknown_field};
use crate::schema::ConfigToml;
use crate::trust;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `/etc/codecoder/config.toml` (or the system path given).
    System(PathBuf),
    /// `$CODECODER_HOME/config.toml`.
    User(PathBuf),
    /// The trusted project's `.codecoder/config.toml`.
    Project(PathBuf),
    /// `[profiles.<name>]`.
    Profile(String),
    /// A `-c key=value` argument.
    Override(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::System(path) | Self::User(path) | Self::Project(path) => {
                write!(f, "{}", path.display())
            }
            Self::Profile(name) => write!(f, "profile {name}"),
            Self::Override(arg) => write!(f, "-c {arg}"),
        }
    }
}

/// What to load.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The system-wide file (normally `/etc/codecoder/config.toml`).
    pub system_path: PathBuf,
    /// `$CODECODER_HOME`, when known.
    pub home: Option<PathBuf>,
    /// The working directory (the project is found from it).
    pub cwd: PathBuf,
    /// `-p NAME`.
    pub profile: Option<String>,
    /// `-c key=value` arguments, in order.
    pub overrides: Vec<String>,
}

/// The merged configuration and where each part came from.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The merged settings (the profile already applied).
    pub config: ConfigToml,
    /// The merged table, as `config show` prints it.
    pub table: Table,
    /// Dotted key → the layer that set it.
    pub origins: BTreeMap<String, Origin>,
    /// The profile applied, if any.
    pub profile: Option<String>,
    /// One-line notices for the person (an untrusted project config that was ignored).
    pub notices: Vec<String>,
    /// Every layer that was applied, in order, as checked settings (permission rules and hooks
    /// are per layer: the project's rules are consulted before the user's).
    pub layers: Vec<(Origin, ConfigToml)>,
    /// Whether the project is trusted (its config, hooks and rules are read).
    pub project_trusted: bool,
}

/// Loads every layer.
pub fn load(options: &LoadOptions) -> Result<LoadedConfig> {
    let mut table = Table::new();
    let mut origins = BTreeMap::new();
    let mut notices = Vec::new();
    let mut layers = Vec::new();

    if let Some(layer) = read_layer(&options.system_path)? {
        let origin = Origin::System(options.system_path.clone());
        layers.push((origin.clone(), checked(&layer)?));
        merge(&mut table, layer, "", &origin, &mut origins);
    }
    if let Some(home) = &options.home {
        let path = home.join("config.toml");
        if let Some(layer) = read_layer(&path)? {
            let origin = Origin::User(path);
            layers.push((origin.clone(), checked(&layer)?));
            merge(&mut table, layer, "", &origin, &mut origins);
        }
    }
    let root = trust::project_root(&options.cwd);
    let project_path = root.join(".codecoder").join("config.toml");
    let project_trusted =
        options.home.as_deref().is_some_and(|home| trust::is_trusted(home, &root));
    if project_path.is_file() {
        if project_trusted {
            if let Some(layer) = read_layer(&project_path)? {
                let origin = Origin::Project(project_path);
                layers.push((origin.clone(), checked(&layer)?));
                merge(&mut table, layer, "", &origin, &mut origins);
            }
        } else {
            notices.push(format!(
                "ignoring {} because {} is not trusted (run `codecoder trust` there to use it)",
                project_path.display(),
                root.display()
            ));
        }
    }

    let mut override_tables = Vec::new();
    for argument in &options.overrides {
        override_tables.push((argument.clone(), parse_override(argument)?));
    }
    // The profile is chosen by -p, else by `profile = …` in the files or a -c override.
    let profile = options.profile.clone().or_else(|| {
        override_tables
            .iter()
            .rev()
            .find_map(|(_, t)| t.get("profile").and_then(Value::as_str).map(str::to_owned))
            .or_else(|| table.get("profile").and_then(Value::as_str).map(str::to_owned))
    });
    if let Some(name) = &profile {
        let profiles = table.get("profiles").and_then(Value::as_table);
        let Some(selected) = profiles.and_then(|p| p.get(name)).and_then(Value::as_table).cloned()
        else {
            let defined = profiles.map(|p| p.keys().cloned().collect()).unwrap_or_default();
            return Err(Error::UnknownProfile { name: name.clone(), defined });
        };
        merge(&mut table, selected, "", &Origin::Profile(name.clone()), &mut origins);
    }
    for (argument, layer) in override_tables {
        let origin = Origin::Override(argument);
        layers.push((origin.clone(), checked(&layer)?));
        merge(&mut table, layer, "", &origin, &mut origins);
    }
    let config = ConfigToml::deserialize(Value::Table(table.clone())).map_err(|err| {
        Error::Override { argument: "(merged configuration)".to_owned(), message: err.to_string() }
    })?;
    Ok(LoadedConfig { config, table, origins, profile, notices, layers, project_trusted })
}

/// A layer's table as settings (already checked when read, so this only fails on a bug).
fn checked(layer: &Table) -> Result<ConfigToml> {
    ConfigToml::deserialize(Value::Table(layer.clone()))
        .map_err(|err| Error::Override { argument: "(layer)".to_owned(), message: err.to_string() })
}

/// Reads one file layer; `None` when the file does not exist.
fn read_layer(path: &Path) -> Result<Option<Table>> {
    let text = match fs_err::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    let table: Table = toml::from_str(&text).map_err(|err| Error::toml(path, &text, &err))?;
    // Check the layer on its own, so an error points into this file.
    if let Err(err) = toml::from_str::<ConfigToml>(&text) {
        return Err(Error::toml(path, &text, &err));
    }
    Ok(Some(table))
}

/// Parses `key.path=value` into a nested table. The value is TOML (`42`, `true`, `"x"`,
/// `["a"]`); anything that does not parse as TOML is taken as a string. The result is checked
/// like a file layer.
pub fn parse_override(argument: &str) -> Result<Table> {
    let fail = |message: String| Error::Override { argument: argument.to_owned(), message };
    let Some((key, raw)) = argument.split_once('=') else {
        return Err(fail("expected key=value".to_owned()));
    };
    let key = key.trim();
    let parts: Vec<&str> = key.split('.').map(str::trim).collect();
    if key.is_empty() || parts.iter().any(|p| p.is_empty()) {
        return Err(fail(format!("`{key}` is not a dotted key")));
    }
    let raw = raw.trim();
    let value = match toml::from_str::<Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| Value::String(raw.to_owned())),
        Err(_) => Value::String(raw.to_owned()),
    };
    let mut table = Table::new();
    let mut node = &mut table;
    for part in &parts[..parts.len() - 1] {
        node = match node.entry((*part).to_owned()).or_insert_with(|| Value::Table(Table::new())) {
            Value::Table(t) => t,
            _ => return Err(fail("internal: not a table".to_owned())),
        };
    }
    node.insert(parts[parts.len() - 1].to_owned(), value);
    if let Err(err) = ConfigToml::deserialize(Value::Table(table.clone())) {
        let message = err.message().trim().to_owned();
        return Err(match unknown_field(&message) {
            Some((field, expected)) => fail(format!(
                "unknown key `{field}`{}",
                closest(&field, &expected)
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default()
            )),
            None => fail(message),
        });
    }
    Ok(table)
}

/// Merges `layer` into `base`, recording origins of the leaves it sets.
fn merge(
    base: &mut Table,
    layer: Table,
    prefix: &str,
    origin: &Origin,
    origins: &mut BTreeMap<String, Origin>,
) {
    for (key, value) in layer {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match (base.get_mut(&key), value) {
            (Some(Value::Table(existing)), Value::Table(incoming)) => {
                merge(existing, incoming, &path, origin, origins);
            }
            (_, value) => {
                // A replaced table's leaves no longer come from where they came from.
                origins.retain(|k, _| !(k == &path || k.starts_with(&format!("{path}."))));
                record_origins(&value, &path, origin, origins);
                base.insert(key, value);
            }
        }
    }
}

fn record_origins(
    value: &Value,
    path: &str,
    origin: &Origin,
    origins: &mut BTreeMap<String, Origin>,
) {
    match value {
        Value::Table(table) => {
            for (key, value) in table {
                record_origins(value, &format!("{path}.{key}"), origin, origins);
            }
        }
        _ => {
            origins.insert(path.to_owned(), origin.clone());
        }
    }
}
