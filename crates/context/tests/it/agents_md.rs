//! AGENTS.md discovery, precedence, budget and the mtime cache.

use codecoder_context::{AgentsMdConfig, AgentsMdLoader, Warning};
use pretty_assertions::assert_eq;

use crate::support::{CountingSource, Project, set_mtime};

fn config(project: &Project) -> AgentsMdConfig {
    AgentsMdConfig::standard(Some(project.home()))
}

#[test]
fn global_first_then_root_down_to_cwd() {
    let project = Project::new();
    project.write("AGENTS.md", "above the root: never read");
    let global = project.write("home/AGENTS.md", "global rules\n");
    let root = project.write("repo/AGENTS.md", "root rules");
    let middle = project.write("repo/a/AGENTS.md", "\n  a rules  \n");
    let cwd_file = project.write("repo/a/b/AGENTS.md", "b rules");
    project.write("repo/other/AGENTS.md", "a sibling: never read");
    project.write("repo/a/b/c/AGENTS.md", "below the cwd: never read");

    let docs = AgentsMdLoader::new().load(&config(&project), &project.path("repo/a/b"));

    assert_eq!(docs.files, vec![global.clone(), root.clone(), middle.clone(), cwd_file.clone()]);
    assert_eq!(
        docs.text,
        format!(
            "## {}\n\nglobal rules\n\n## {}\n\nroot rules\n\n## {}\n\na rules\n\n## {}\n\nb rules",
            global.display(),
            root.display(),
            middle.display(),
            cwd_file.display()
        )
    );
    assert!(docs.warnings.is_empty());
}

#[test]
fn override_beats_agents_md_beats_fallback() {
    let project = Project::new();
    let root_override = project.write("repo/AGENTS.override.md", "root override");
    project.write("repo/AGENTS.md", "root agents: shadowed");
    project.write("repo/CLAUDE.md", "root claude: shadowed");
    let middle = project.write("repo/a/AGENTS.md", "a agents");
    project.write("repo/a/CLAUDE.md", "a claude: shadowed");
    let fallback = project.write("repo/a/b/CLAUDE.md", "b claude");
    let cwd = project.path("repo/a/b");

    let mut with_fallback = config(&project);
    with_fallback.fallback_names = vec!["CLAUDE.md".to_owned()];
    let docs = AgentsMdLoader::new().load(&with_fallback, &cwd);
    assert_eq!(docs.files, vec![root_override.clone(), middle.clone(), fallback]);
    assert!(docs.text.contains("root override") && docs.text.contains("b claude"));
    assert!(!docs.text.contains("shadowed"), "{}", docs.text);

    // Without the fallback configured, `CLAUDE.md` is not read.
    let docs = AgentsMdLoader::new().load(&config(&project), &cwd);
    assert_eq!(docs.files, vec![root_override, middle]);
}

#[test]
fn without_a_git_root_only_the_cwd_is_searched() {
    let project = Project::new();
    project.write("plain/AGENTS.md", "parent: not a project root, never read");
    let cwd_file = project.write("plain/sub/AGENTS.md", "sub rules");
    let docs = AgentsMdLoader::new().load(&config(&project), &project.path("plain/sub"));
    assert_eq!(docs.files, vec![cwd_file]);
}

#[test]
fn blank_and_missing_files_add_nothing() {
    let project = Project::new();
    project.write("repo/AGENTS.md", " \n\n");
    let docs = AgentsMdLoader::new().load(&AgentsMdConfig::standard(None), &project.repo());
    assert_eq!((docs.files.len(), docs.text.as_str()), (0, ""));
}

#[test]
fn over_budget_is_cut_with_a_note_and_a_warning() {
    let project = Project::new();
    let first = project.write("repo/AGENTS.md", &"root line\n".repeat(10));
    project.write("repo/a/AGENTS.md", &"nested line\n".repeat(20));
    let mut config = config(&project);
    config.budget_bytes = 200;

    let docs = AgentsMdLoader::new().load(&config, &project.path("repo/a"));

    let header = format!("## {}\n\n", first.display());
    let total = header.len() + 99 + 2 + (header.len() + 2) + 239;
    let kept = docs.text.split("\n\n[AGENTS.md truncated").next().unwrap();
    assert!(kept.len() <= 200, "{} bytes kept", kept.len());
    assert!(docs.text.starts_with(&format!("{header}{}", "root line\n".repeat(9))));
    assert!(
        docs.text.ends_with(&format!(
            "\n\n[AGENTS.md truncated: {} of {total} bytes shown (budget 200 bytes); the rest \
             was left out]",
            kept.len()
        )),
        "{}",
        docs.text
    );
    assert_eq!(
        docs.warnings,
        vec![Warning::AgentsMdTruncated {
            shown_bytes: kept.len(),
            total_bytes: total,
            budget_bytes: 200
        }]
    );
}

#[test]
fn same_mtime_is_a_cache_hit_and_a_new_mtime_rereads() {
    let project = Project::new();
    let path = project.write("repo/AGENTS.md", "version one");
    set_mtime(&path, 1_000_000);
    let source = CountingSource::default();
    let loader = AgentsMdLoader::with_source(Box::new(source.clone()));
    let config = config(&project);

    let docs = loader.load(&config, &project.repo());
    assert!(docs.text.contains("version one"));
    assert_eq!(source.reads(), 1);

    let again = loader.load(&config, &project.repo());
    assert_eq!((again.text, source.reads()), (docs.text.clone(), 1));

    // Changed content but the same mtime: the cache answers, so the old text is what we see.
    fs_err::write(&path, "version two").unwrap();
    set_mtime(&path, 1_000_000);
    let stale = loader.load(&config, &project.repo());
    assert_eq!((stale.text, source.reads()), (docs.text, 1));

    // A new mtime: read again.
    set_mtime(&path, 1_000_060);
    let fresh = loader.load(&config, &project.repo());
    assert!(fresh.text.contains("version two"), "{}", fresh.text);
    assert_eq!(source.reads(), 2);

    // Gone: nothing, whatever the cache holds.
    fs_err::remove_file(&path).unwrap();
    assert_eq!(loader.load(&config, &project.repo()).files.len(), 0);
}

#[test]
fn each_file_is_cached_on_its_own() {
    let project = Project::new();
    let root = project.write("repo/AGENTS.md", "root");
    let nested = project.write("repo/a/AGENTS.md", "nested");
    set_mtime(&root, 5_000);
    set_mtime(&nested, 5_000);
    let source = CountingSource::default();
    let loader = AgentsMdLoader::with_source(Box::new(source.clone()));
    let config = config(&project);
    let cwd = project.path("repo/a");

    loader.load(&config, &cwd);
    assert_eq!(source.reads(), 2);
    fs_err::write(&nested, "nested, edited").unwrap();
    set_mtime(&nested, 6_000);
    let docs = loader.load(&config, &cwd);
    assert_eq!(source.reads(), 3, "only the changed file is read again");
    assert!(docs.text.contains("nested, edited"));
}

/// Reads like the file system, except that files in a directory named `locked` fail.
struct FailingSource;

impl codecoder_context::DocSource for FailingSource {
    fn modified(
        &self,
        path: &std::path::Path,
    ) -> codecoder_context::Result<Option<std::time::SystemTime>> {
        codecoder_context::FileSystem.modified(path)
    }

    fn read(&self, path: &std::path::Path) -> codecoder_context::Result<String> {
        if path.parent().is_some_and(|dir| dir.ends_with("locked")) {
            return Err(codecoder_context::Error::Io {
                path: path.to_owned(),
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            });
        }
        codecoder_context::FileSystem.read(path)
    }
}

#[test]
fn an_unreadable_file_is_left_out_with_a_warning() {
    let project = Project::new();
    let root = project.write("repo/AGENTS.md", "root rules");
    let locked = project.write("repo/locked/AGENTS.md", "never seen");
    let loader = AgentsMdLoader::with_source(Box::new(FailingSource));
    let docs = loader.load(&config(&project), &project.path("repo/locked"));
    assert_eq!(docs.files, vec![root]);
    assert_eq!(
        docs.warnings,
        vec![Warning::Unreadable {
            path: locked.clone(),
            message: format!("could not read {}: permission denied", locked.display()),
        }]
    );
    assert_eq!(
        docs.warnings[0].to_string(),
        format!(
            "left out {}: could not read {}: permission denied",
            locked.display(),
            locked.display()
        )
    );
}

#[test]
fn an_empty_override_silences_its_directory() {
    let project = Project::new();
    project.write("repo/AGENTS.override.md", "\n");
    project.write("repo/AGENTS.md", "silenced");
    let docs = AgentsMdLoader::new().load(&config(&project), &project.repo());
    assert_eq!((docs.files.len(), docs.text.as_str()), (0, ""));
}
