//! Where skills, agents and commands are found, and the skill store that re-reads a SKILL.md
//! only when it changed.
//!
//! Project folders are searched from the working directory up to the repository root (the
//! first folder holding `.git`; only the working directory when there is none), nearer first;
//! then the user's. In each place: `.codecoder/<kind>`, `.agents/<kind>` (skills only) and
//! `.claude/<kind>`, in that order. The first definition of a name wins; a later one is a
//! shadowing warning.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use crate::error::{Error, Warning};
use crate::skill::{Skill, parse_skill};

/// Folders a skill folder holds at most (the integrator guide's cap).
const MAX_ENTRIES: usize = 2_000;

/// Where a definition was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The project (working directory up to the repository root).
    Project,
    /// The user's folders.
    User,
}

/// The folders searched, highest precedence first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roots {
    /// Each place (a project folder or the user's home) with its scope: `<place>/.codecoder`,
    /// `.agents`, `.claude` are looked in.
    pub places: Vec<(PathBuf, Scope)>,
    /// `$CODECODER_HOME`: its `skills`, `agents`, `commands` come first among the user's.
    pub codecoder_home: Option<PathBuf>,
    /// Claude Code plugins, `(name, directory)`: the skills in `<directory>/skills` come last,
    /// named `name:skill`.
    pub plugins: Vec<(String, PathBuf)>,
}

impl Roots {
    /// The project's places from `cwd` up to the repository root, then `codecoder_home` and
    /// the user's `home`.
    pub fn standard(cwd: &Path, codecoder_home: Option<&Path>, home: Option<&Path>) -> Self {
        let mut places = Vec::new();
        let root = cwd.ancestors().find(|dir| dir.join(".git").exists());
        match root {
            Some(root) => {
                for dir in cwd.ancestors() {
                    places.push((dir.to_path_buf(), Scope::Project));
                    if dir == root {
                        break;
                    }
                }
            }
            None => places.push((cwd.to_path_buf(), Scope::Project)),
        }
        if let Some(home) = home {
            // A home that is also a project folder is searched once, as the project.
            if !places.iter().any(|(dir, _)| dir == home) {
                places.push((home.to_path_buf(), Scope::User));
            }
        }
        Self { places, codecoder_home: codecoder_home.map(Path::to_path_buf), plugins: Vec::new() }
    }

    /// The folders holding definitions of `kind` (`skills`, `agents`, `commands`), highest
    /// precedence first.
    pub fn dirs(&self, kind: &str) -> Vec<(PathBuf, Scope)> {
        let mut dirs = Vec::new();
        let mut user_started = false;
        for (place, scope) in &self.places {
            if *scope == Scope::User && !user_started {
                user_started = true;
                if let Some(home) = &self.codecoder_home {
                    dirs.push((home.join(kind), Scope::User));
                }
            }
            dirs.push((place.join(".codecoder").join(kind), *scope));
            if kind == "skills" {
                dirs.push((place.join(".agents").join(kind), *scope));
            }
            dirs.push((place.join(".claude").join(kind), *scope));
        }
        if !user_started && let Some(home) = &self.codecoder_home {
            dirs.push((home.join(kind), Scope::User));
        }
        dirs
    }
}

/// The `*.md` files of `dir`, sorted (none when it is missing).
pub(crate) fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .take(MAX_ENTRIES)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
        .collect();
    files.sort();
    files
}

/// What a file looked like when it was parsed.
#[derive(Debug, Clone)]
struct Cached {
    modified: Option<SystemTime>,
    len: u64,
    parsed: Result<(Skill, Vec<Warning>), Warning>,
}

/// The skills of a session: found again on every `scan`, each SKILL.md parsed again only when
/// its modification time or size changed.
#[derive(Debug, Default)]
pub struct SkillStore {
    roots: Roots,
    cache: Mutex<HashMap<PathBuf, Cached>>,
}

impl SkillStore {
    /// A store over `roots`.
    pub fn new(roots: Roots) -> Self {
        Self { roots, cache: Mutex::new(HashMap::new()) }
    }

    /// The skills by name (the winner of each name) and what was skipped or shadowed.
    pub fn scan(&self) -> (BTreeMap<String, Skill>, Vec<Warning>) {
        let mut skills: BTreeMap<String, Skill> = BTreeMap::new();
        let mut warnings = Vec::new();
        let mut dirs: Vec<(PathBuf, Scope, Option<&str>)> =
            self.roots.dirs("skills").into_iter().map(|(dir, scope)| (dir, scope, None)).collect();
        for (name, dir) in &self.roots.plugins {
            dirs.push((dir.join("skills"), Scope::User, Some(name.as_str())));
        }
        for (dir, scope, plugin) in dirs {
            let Ok(entries) = fs_err::read_dir(&dir) else {
                continue;
            };
            let mut folders: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .take(MAX_ENTRIES)
                .map(|entry| entry.path())
                .filter(|path| {
                    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                    !matches!(name.as_deref(), Some(".git" | "node_modules"))
                })
                .collect();
            folders.sort();
            for folder in folders {
                let path = folder.join("SKILL.md");
                let Some(parsed) = self.parse(&path, scope) else {
                    continue;
                };
                match parsed {
                    Ok((mut skill, skill_warnings)) => {
                        warnings.extend(skill_warnings);
                        if let Some(plugin) = plugin {
                            skill.name = format!("{plugin}:{}", skill.name);
                        }
                        if let Some(winner) = skills.get(&skill.name) {
                            warnings.push(Warning {
                                path: skill.path.clone(),
                                line: None,
                                message: format!(
                                    "skill `{}` is shadowed by {}",
                                    skill.name,
                                    winner.path.display()
                                ),
                            });
                        } else {
                            skills.insert(skill.name.clone(), skill);
                        }
                    }
                    Err(warning) => warnings.push(warning),
                }
            }
        }
        (skills, warnings)
    }

    /// The skill named `name` as its file says now.
    ///
    /// # Errors
    /// When no skill has the name, or its file no longer parses.
    pub fn get(&self, name: &str) -> Result<Skill, Error> {
        let (mut skills, warnings) = self.scan();
        if let Some(skill) = skills.remove(name) {
            return Ok(skill);
        }
        let broken = warnings.into_iter().find(|w| {
            w.line.is_some() && w.path.parent().and_then(Path::file_name).is_some_and(|f| f == name)
        });
        match broken {
            Some(warning) => Err(Error::Invalid(warning)),
            None => Err(Error::UnknownSkill { name: name.to_owned() }),
        }
    }

    /// `path` parsed, from the cache when unchanged; `None` when there is no such file.
    fn parse(&self, path: &Path, scope: Scope) -> Option<Result<(Skill, Vec<Warning>), Warning>> {
        let meta = fs_err::metadata(path).ok().filter(std::fs::Metadata::is_file)?;
        let modified = meta.modified().ok();
        let len = meta.len();
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cached) = cache.get(path)
            && cached.modified == modified
            && cached.len == len
        {
            return Some(cached.parsed.clone());
        }
        let parsed = match fs_err::read_to_string(path) {
            Ok(text) => parse_skill(path, &text, scope),
            Err(err) => {
                Err(Warning { path: path.to_owned(), line: None, message: err.to_string() })
            }
        };
        cache.insert(path.to_owned(), Cached { modified, len, parsed: parsed.clone() });
        Some(parsed)
    }
}
