//! Unit tests for the guard: every protected kind in a workspace under another writable root
//! (`/tmp`-like) and in one that is not; symlinks, `..`, `.git` pointer files, `core.hooksPath`,
//! codecoder's home, and the messages.

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

use super::{GitEnv, Guard, Protection, Rule};
use crate::paths::resolve;

struct Layout {
    _dir: tempfile::TempDir,
    base: PathBuf,
    ws: PathBuf,
    roots: Vec<PathBuf>,
    home: PathBuf,
}

/// `nested`: the roots are `base/tmp` and the workspace `base/tmp/ws` inside it; otherwise the
/// workspace `base/ws` and an unrelated `base/tmp`. The workspace has `.git/hooks` and
/// `.git/config`; codecoder's home is `base/tmp/home`.
fn layout(nested: bool) -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let base = fs_err::canonicalize(dir.path()).unwrap();
    let tmp = base.join("tmp");
    let ws = if nested { tmp.join("ws") } else { base.join("ws") };
    fs_err::create_dir_all(ws.join(".git/hooks")).unwrap();
    fs_err::create_dir_all(ws.join("src")).unwrap();
    fs_err::write(ws.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    fs_err::create_dir_all(&tmp).unwrap();
    let home = tmp.join("home");
    Layout { _dir: dir, base, ws: ws.clone(), roots: vec![tmp, ws], home }
}

impl Layout {
    fn guard(&self) -> Guard {
        Guard::new(&self.roots, &self.ws, std::slice::from_ref(&self.home))
    }
    fn check(&self, relative: &str) -> Option<Protection> {
        self.guard().check(&resolve(Path::new(relative), &self.ws))
    }
}

#[test]
fn protected_kinds_in_both_layouts() {
    let table: [(&str, Option<(&str, Rule)>); 14] = [
        (".git/hooks/pre-commit", Some((".git", Rule::Dir { name: ".git" }))),
        (".git/config", Some((".git", Rule::Dir { name: ".git" }))),
        (".git", Some((".git", Rule::Dir { name: ".git" }))),
        (".codecoder/config.toml", Some((".codecoder", Rule::Dir { name: ".codecoder" }))),
        (".agents/x", Some((".agents", Rule::Dir { name: ".agents" }))),
        (".claude/settings.json", Some((".claude/settings.json", Rule::ClaudeSettings))),
        (
            ".claude/settings.local.json",
            Some((".claude/settings.local.json", Rule::ClaudeSettings)),
        ),
        (".mcp.json", Some((".mcp.json", Rule::McpJson))),
        ("sub/.git/hooks/post-checkout", Some(("sub/.git", Rule::Dir { name: ".git" }))),
        ("src/../.git/config", Some((".git", Rule::Dir { name: ".git" }))),
        ("src/main.rs", None),
        (".claude/commands/review.md", None),
        (".gitignore", None),
        ("mcp.json", None),
    ];
    for nested in [true, false] {
        let layout = layout(nested);
        for (relative, expected) in &table {
            let found = layout.check(relative);
            let expected = expected.as_ref().map(|(protected, rule)| Protection {
                path: resolve(Path::new(relative), &layout.ws),
                protected: layout.ws.join(protected),
                root: Some(layout.ws.clone()),
                rule: rule.clone(),
            });
            assert_eq!(found, expected, "{relative} (nested: {nested})");
        }
    }
}

#[test]
fn the_message_names_the_path_the_name_and_the_root() {
    let layout = layout(true);
    let found = layout.check(".git/hooks/pre-commit").unwrap();
    let ws = layout.ws.display();
    assert_eq!(
        found.to_string(),
        format!(
            "`{ws}/.git/hooks/pre-commit` is protected: `.git` inside the writable root {ws} \
             (files there run code later)"
        )
    );
    // The outer root alone (the workspace is not a root) still protects it, named from there.
    let outer = Guard::new(&layout.roots[..1], &layout.ws, &[]);
    let found = outer.check(&layout.ws.join(".git/config")).unwrap();
    assert_eq!(found.protected, layout.ws.join(".git"));
    assert!(found.rule_text().starts_with("`ws/.git` inside the writable root "), "{found}");
}

#[test]
fn a_symlink_into_git_resolves_to_a_protected_path() {
    for nested in [true, false] {
        let layout = layout(nested);
        std::os::unix::fs::symlink(layout.ws.join(".git"), layout.ws.join("innocent")).unwrap();
        std::os::unix::fs::symlink(layout.ws.join(".git/hooks"), layout.ws.join("src/h")).unwrap();
        // `..` is applied before symlinks: `src/h/../config` is `src/config`, and that is the
        // path a writer that uses `resolve` writes.
        assert_eq!(layout.check("src/h/../config"), None);
        for relative in ["innocent/hooks/pre-commit", "src/h/post-merge", "innocent/../.mcp.json"] {
            let found = layout.check(relative);
            let expected = if relative.ends_with(".mcp.json") { ".mcp.json" } else { ".git" };
            assert_eq!(
                found.map(|p| p.protected),
                Some(layout.ws.join(expected)),
                "{relative} (nested: {nested})"
            );
        }
    }
}

#[test]
fn a_git_pointer_file_protects_its_gitdir_and_common_dir() {
    let layout = layout(true);
    // A linked worktree: `wt/.git` names `repo.git/worktrees/wt`, whose commondir is the repo.
    let repo = layout.roots[0].join("repo.git");
    let gitdir = repo.join("worktrees/wt");
    fs_err::create_dir_all(&gitdir).unwrap();
    fs_err::create_dir_all(repo.join("hooks")).unwrap();
    fs_err::write(gitdir.join("commondir"), "../..\n").unwrap();
    let wt = layout.base.join("wt");
    fs_err::create_dir_all(&wt).unwrap();
    fs_err::write(wt.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
    let guard = Guard::new(&[layout.roots[0].clone(), wt.clone()], &wt, &[]);
    for (path, protected) in [
        (repo.join("hooks/pre-commit"), &repo),
        (gitdir.join("HEAD"), &gitdir),
        (wt.join(".git"), &wt.join(".git")),
    ] {
        let found = guard.check(&path);
        assert_eq!(found.as_ref().map(|p| &p.protected), Some(protected), "{}", path.display());
    }
    let found = guard.check(&repo.join("hooks/pre-commit")).unwrap();
    assert_eq!(found.rule, Rule::GitDir { pointer: wt.join(".git") });
    assert!(found.to_string().contains("is the git directory"), "{found}");
    let existing = guard.existing();
    for path in [&repo, &gitdir, &wt.join(".git")] {
        assert!(existing.contains(path), "{} in {existing:?}", path.display());
    }
}

#[test]
fn core_hooks_path_is_protected_whether_or_not_it_exists() {
    for nested in [true, false] {
        let layout = layout(nested);
        fs_err::write(
            layout.ws.join(".git/config"),
            "[core]\n\tbare = false\n\thooksPath = .husky\n",
        )
        .unwrap();
        let found = layout.check(".husky/pre-commit").unwrap();
        assert_eq!(found.protected, layout.ws.join(".husky"));
        assert_eq!(found.rule, Rule::HooksPath { config: layout.ws.join(".git/config") });
        assert!(found.to_string().contains("core.hooksPath"), "{found}");
        // A `[core "x"]` subsection or another section does not count.
        fs_err::write(layout.ws.join(".git/config"), "[alias]\n\thooksPath = .husky\n").unwrap();
        assert_eq!(layout.check(".husky/pre-commit"), None);
    }
}

#[test]
fn global_and_system_hooks_paths_are_protected_as_git_resolves_them() {
    let layout = layout(false);
    let user_home = layout.base.join("user");
    fs_err::create_dir_all(user_home.join(".config/git")).unwrap();
    let hooks = |value: &str| format!("[user]\n\tname = x\n[core]\n\thooksPath = {value}\n");
    // `~/.gitconfig`: `~/` is the home, even when the home is inside a writable root.
    fs_err::write(user_home.join(".gitconfig"), hooks("~/.githooks")).unwrap();
    // `$XDG_CONFIG_HOME/git/config`: relative to each repository's work tree top.
    fs_err::write(user_home.join(".config/git/config"), hooks("tools/hooks")).unwrap();
    let system = layout.base.join("gitconfig");
    fs_err::write(&system, hooks("\"/opt/hooks\"")).unwrap();
    let git_env = GitEnv {
        home: Some(user_home.clone()),
        xdg_config_home: None,
        config_global: None,
        config_system: Some(system.clone()),
        no_system: false,
    };
    let guard = Guard::with_git_env(&layout.roots, &layout.ws, &[], &git_env);
    let check = |path: PathBuf| guard.check(&resolve(&path, &layout.ws));
    let found = check(user_home.join(".githooks/pre-commit")).unwrap();
    assert_eq!(found.protected, user_home.join(".githooks"));
    assert_eq!(found.rule, Rule::HooksPath { config: user_home.join(".gitconfig") });
    assert!(found.to_string().contains(".gitconfig"), "{found}");
    let found = check(layout.ws.join("tools/hooks/post-checkout")).unwrap();
    assert_eq!(found.protected, layout.ws.join("tools/hooks"));
    assert_eq!(found.rule, Rule::HooksPath { config: user_home.join(".config/git/config") });
    let found = check(PathBuf::from("/opt/hooks/pre-push")).unwrap();
    assert_eq!(found.rule, Rule::HooksPath { config: system.clone() });
    assert_eq!(check(layout.ws.join("tools/other")), None);
    // A relative global hooks path means nothing outside a repository.
    let plain = layout.base.join("plain");
    fs_err::create_dir_all(&plain).unwrap();
    let guard = Guard::with_git_env(std::slice::from_ref(&plain), &plain, &[], &git_env);
    assert_eq!(guard.check(&plain.join("tools/hooks/x")), None);

    // `GIT_CONFIG_GLOBAL` replaces both user files; `GIT_CONFIG_NOSYSTEM` drops the system one.
    let global = layout.base.join("global.cfg");
    fs_err::write(&global, hooks("../shared-hooks")).unwrap();
    let git_env = GitEnv { config_global: Some(global.clone()), no_system: true, ..git_env };
    let guard = Guard::with_git_env(&layout.roots, &layout.ws, &[], &git_env);
    let found = guard.check(&layout.base.join("shared-hooks/pre-commit")).unwrap();
    assert_eq!(found.rule, Rule::HooksPath { config: global });
    assert_eq!(found.protected, layout.base.join("shared-hooks"));
    assert_eq!(guard.check(&user_home.join(".githooks/pre-commit")), None);
    assert_eq!(guard.check(Path::new("/opt/hooks/pre-push")), None);
}

#[test]
fn git_env_lists_the_files_git_reads() {
    let home = PathBuf::from("/h");
    let git_env = GitEnv { home: Some(home.clone()), ..GitEnv::default() };
    assert_eq!(
        git_env.config_files(),
        vec![
            PathBuf::from("/etc/gitconfig"),
            PathBuf::from("/h/.config/git/config"),
            PathBuf::from("/h/.gitconfig")
        ]
    );
    let git_env = GitEnv { xdg_config_home: Some("/x".into()), no_system: true, ..git_env };
    assert_eq!(
        git_env.config_files(),
        vec![PathBuf::from("/x/git/config"), PathBuf::from("/h/.gitconfig")]
    );
}

#[test]
fn codecoder_home_is_protected_wherever_it_is() {
    for nested in [true, false] {
        let layout = layout(nested);
        let found = layout.check(&layout.home.join("config.toml").display().to_string()).unwrap();
        assert_eq!(found.rule, Rule::CodecoderHome);
        assert_eq!(found.protected, layout.home);
        assert!(found.to_string().contains("codecoder's home"), "{found}");
    }
    // Outside every root too.
    let guard = Guard::new(&[PathBuf::from("/w")], Path::new("/w"), &[PathBuf::from("/h/.cc")]);
    assert_eq!(guard.check(Path::new("/h/.cc/x")).map(|p| p.rule), Some(Rule::CodecoderHome));
}

#[test]
fn existing_lists_what_exists_directly_in_each_root() {
    let layout = layout(false);
    fs_err::write(layout.ws.join(".mcp.json"), "{}").unwrap();
    fs_err::create_dir_all(layout.ws.join(".claude")).unwrap();
    fs_err::write(layout.ws.join(".claude/settings.json"), "{}").unwrap();
    fs_err::write(layout.ws.join(".claude/settings.team.json"), "{}").unwrap();
    fs_err::create_dir_all(&layout.home).unwrap();
    let existing = layout.guard().existing();
    let expected: Vec<PathBuf> = [
        layout.roots[0].join("home"),
        layout.ws.join(".claude/settings.json"),
        layout.ws.join(".claude/settings.team.json"),
        layout.ws.join(".git"),
        layout.ws.join(".mcp.json"),
    ]
    .into_iter()
    .collect();
    let mut expected = expected;
    expected.sort();
    assert_eq!(existing, expected);
    // Names that do not exist yet are in the literal list (for seatbelt).
    assert!(layout.guard().literal().contains(&layout.ws.join(".codecoder")));
}
