//! Rule parsing (good and bad, with messages) and matching, including `../` and symlink
//! dodges.

use codecoder_policy::{Call, RuleOrigin, RuleSet, ToolKind, Verdict};
use codecoder_protocol::CallKind;
use pretty_assertions::assert_eq;

use crate::support::{Workspace, view};

fn strings(rules: &[&str]) -> Vec<String> {
    rules.iter().map(|rule| (*rule).to_owned()).collect()
}

fn set(allow: &[&str], ask: &[&str], deny: &[&str], origin: RuleOrigin) -> RuleSet {
    RuleSet::parse(&strings(allow), &strings(ask), &strings(deny), origin).expect("rules parse")
}

/// The opinion of `set` on a call of `tool` with `keys`: `Some((list, rule))`.
fn opinion(
    set: &RuleSet,
    workspace: &Workspace,
    tool: &str,
    keys: &[&str],
) -> Option<(Verdict, String)> {
    let ctx = workspace.ctx();
    let call = Call::new(tool, &view(tool, ToolKind::Other).kind, &strings(keys), &ctx);
    set.evaluate(&call, &ctx).map(|(list, rule)| (list, rule.text().to_owned()))
}

fn allow(rule: &str) -> Option<(Verdict, String)> {
    Some((Verdict::Allow, rule.to_owned()))
}

fn deny(rule: &str) -> Option<(Verdict, String)> {
    Some((Verdict::Deny, rule.to_owned()))
}

#[test]
fn good_rules_parse() {
    let rules = [
        "run_command",
        "Bash(git status*)",
        "run_command(cargo test:*)",
        "edit(src/**)",
        "Write(*.md)",
        "read(~/.ssh/**)",
        "Read(//etc/**)",
        "Edit(/docs/**)",
        "web_fetch(domain:docs.rs)",
        "WebFetch(domain:*.rs-lang.org)",
        "mcp__github__create_issue",
        "mcp__github",
        "mcp__github__*",
        "job_kill",
        "  Bash( npm   test )  ",
    ];
    let parsed = set(&rules, &[], &[], RuleOrigin::User);
    let texts: Vec<&str> = parsed.rules(Verdict::Allow).iter().map(|r| r.text()).collect();
    assert_eq!(texts.len(), rules.len());
    assert_eq!(texts.last(), Some(&"Bash( npm   test )"));
}

#[test]
fn bad_rules_say_what_is_wrong() {
    let cases = [
        (
            "",
            "user allow rule ``: the rule is empty; write a tool name such as `run_command` or a tool with a pattern such as `edit(src/**)`",
        ),
        (
            "Bash(git",
            "user allow rule `Bash(git`: unbalanced parentheses; write `Tool` or `Tool(pattern)` with the `)` last",
        ),
        (
            "edit)",
            "user allow rule `edit)`: unbalanced parentheses; write `Tool` or `Tool(pattern)` with the `)` last",
        ),
        (
            "run command",
            "user allow rule `run command`: `run command` is not a tool name; use letters, digits, `_` and `-` (for example `run_command`, `Bash`, `mcp__server__tool`)",
        ),
        (
            "Bash()",
            "user allow rule `Bash()`: the pattern inside `()` is empty; drop the parentheses to match every call of the tool",
        ),
        (
            "job_kill(3)",
            "user allow rule `job_kill(3)`: `job_kill` takes no pattern (only shell, edit, read and web_fetch rules do); write `job_kill` alone",
        ),
        (
            "edit(src/[)",
            "user allow rule `edit(src/[)`: `src/[` is not a valid glob: unclosed character class; missing ']'",
        ),
        (
            "read(~bob/x)",
            "user allow rule `read(~bob/x)`: `~user` paths are not supported; write `~/…` or an absolute `//path`",
        ),
        (
            "web_fetch(docs.rs)",
            "user allow rule `web_fetch(docs.rs)`: `docs.rs` is not a web_fetch pattern; write `domain:HOST` (exact host) or `domain:*.HOST` (its subdomains)",
        ),
        (
            "web_fetch(domain:)",
            "user allow rule `web_fetch(domain:)`: `domain:` is not a web_fetch pattern; write `domain:HOST` (exact host) or `domain:*.HOST` (its subdomains)",
        ),
        (
            "foo__*",
            "user allow rule `foo__*`: `foo__*` is not a tool name; use letters, digits, `_` and `-` (for example `run_command`, `Bash`, `mcp__server__tool`)",
        ),
    ];
    for (rule, message) in cases {
        let err = RuleSet::parse(&strings(&[rule]), &[], &[], RuleOrigin::User).expect_err(rule);
        assert_eq!(err.to_string(), message);
    }
    let err = RuleSet::parse(
        &[],
        &[],
        &strings(&["ok", "Bash("]),
        RuleOrigin::Project { root: "/p".into() },
    )
    .expect_err("bad deny");
    assert_eq!(
        err.to_string(),
        "project deny rule `Bash(`: unbalanced parentheses; write `Tool` or `Tool(pattern)` with the `)` last"
    );
}

#[test]
fn shell_patterns() {
    let workspace = Workspace::new();
    let rules = set(
        &[
            "run_command(cargo test:*)",
            "Bash(git status*)",
            "Bash(git commit *)",
            "Bash(git diff:*)",
        ],
        &[],
        &["Bash(git push:*)"],
        RuleOrigin::User,
    );
    let check =
        |command: &str| opinion(&rules, &workspace, "run_command", &[&format!("shell:{command}")]);
    assert_eq!(check("cargo test"), allow("run_command(cargo test:*)"));
    assert_eq!(check("cargo test -p x"), allow("run_command(cargo test:*)"));
    assert_eq!(check("cargo testing"), None);
    assert_eq!(check("git status"), allow("Bash(git status*)"));
    assert_eq!(check("git status -s"), allow("Bash(git status*)"));
    assert_eq!(check("git commit"), allow("Bash(git commit *)"));
    assert_eq!(check("git commit -m x"), allow("Bash(git commit *)"));
    assert_eq!(check("git commits"), None);
    // Every part must be allowed, by a rule or by being Safe; a Safe-only line is no opinion.
    assert_eq!(check("cargo test && cargo build"), None);
    assert_eq!(check("cargo test && ls"), allow("run_command(cargo test:*)"));
    assert_eq!(check("ls"), None);
    // Assignments are stripped, wrappers looked through, whitespace collapsed.
    assert_eq!(check("RUST_LOG=debug   cargo  test"), allow("run_command(cargo test:*)"));
    assert_eq!(check("timeout 60 cargo test"), allow("run_command(cargo test:*)"));
    // A substitution is a part of its own.
    assert_eq!(check("git diff $(rm -rf /)"), None);
    // Any part matching a deny rule is enough, wherever it hides.
    assert_eq!(check("git status && git push"), deny("Bash(git push:*)"));
    assert_eq!(check("bash -c 'git push origin main'"), deny("Bash(git push:*)"));
    assert_eq!(check("echo $(git push)"), deny("Bash(git push:*)"));
    // A string is not a command.
    assert_eq!(check("echo 'git push'"), None);
}

#[test]
fn bare_tool_names_match_every_call_of_their_subject() {
    let workspace = Workspace::new();
    let rules =
        set(&["run_command", "read", "mcp__github", "job_kill"], &[], &[], RuleOrigin::User);
    assert_eq!(
        opinion(&rules, &workspace, "run_command", &["shell:rm -rf x"]),
        allow("run_command")
    );
    assert_eq!(opinion(&rules, &workspace, "read_file", &["read_file"]), allow("read"));
    assert_eq!(opinion(&rules, &workspace, "grep", &["read:src"]), allow("read"));
    assert_eq!(opinion(&rules, &workspace, "mcp__github__create_issue", &[]), allow("mcp__github"));
    assert_eq!(opinion(&rules, &workspace, "mcp__githubx__create", &[]), None);
    assert_eq!(opinion(&rules, &workspace, "job_kill", &["job_kill"]), allow("job_kill"));
    assert_eq!(opinion(&rules, &workspace, "write_file", &["edit:src/a.rs"]), None);
}

#[test]
fn claude_tool_names_stand_for_ours() {
    let workspace = Workspace::new();
    for (rule, tool, key) in [
        ("Bash", "run_command", "shell:make"),
        ("Read", "read_file", "read:src/a.rs"),
        ("LS", "list_dir", "read:src"),
        ("Glob", "glob", "read:src"),
        ("Grep", "grep", "read:src"),
        ("Edit", "edit", "edit:src/a.rs"),
        ("MultiEdit", "edit", "edit:src/a.rs"),
        ("Write", "write_file", "edit:src/a.rs"),
        ("WebFetch", "web_fetch", "web_fetch:docs.rs"),
    ] {
        let rules = set(&[rule], &[], &[], RuleOrigin::User);
        assert_eq!(opinion(&rules, &workspace, tool, &[key]), allow(rule), "{rule} on {tool}");
        // The bare name covers the tool's calls that name no subject too.
        assert_eq!(opinion(&rules, &workspace, tool, &[tool]), allow(rule), "{rule} on {tool}");
    }
    let rules = set(&["LS(src/**)", "MultiEdit(src/**)"], &[], &[], RuleOrigin::User);
    assert_eq!(opinion(&rules, &workspace, "list_dir", &["read:src/x"]), allow("LS(src/**)"));
    assert_eq!(opinion(&rules, &workspace, "edit", &["edit:src/a.rs"]), allow("MultiEdit(src/**)"));
    assert_eq!(opinion(&rules, &workspace, "edit", &["edit:docs/a.md"]), None);
}

#[test]
fn deny_beats_ask_beats_allow_within_a_set() {
    let workspace = Workspace::new();
    let rules = set(
        &["Bash(git:*)"],
        &["Bash(git push:*)"],
        &["Bash(git push --force:*)"],
        RuleOrigin::User,
    );
    let check =
        |command: &str| opinion(&rules, &workspace, "run_command", &[&format!("shell:{command}")]);
    assert_eq!(check("git fetch"), allow("Bash(git:*)"));
    assert_eq!(check("git push"), Some((Verdict::Ask, "Bash(git push:*)".to_owned())));
    assert_eq!(check("git push --force"), deny("Bash(git push --force:*)"));
}

#[test]
fn path_patterns_resolve_bases() {
    let workspace = Workspace::new();
    let project = RuleOrigin::Project { root: workspace.ws.clone() };
    let rules = set(
        &["edit(src/**)", "Edit(/docs/**)", "write_file(*.env)", "Read(//etc/**)"],
        &[],
        &["read(~/.ssh)"],
        project,
    );
    let edit = |path: &str| opinion(&rules, &workspace, "edit", &[&format!("edit:{path}")]);
    let read = |path: &str| opinion(&rules, &workspace, "read_file", &[&format!("read:{path}")]);
    assert_eq!(edit("src/main.rs"), allow("edit(src/**)"));
    assert_eq!(edit("./src/deep/er.rs"), allow("edit(src/**)"));
    assert_eq!(edit(&workspace.ws.join("src/x.rs").display().to_string()), allow("edit(src/**)"));
    assert_eq!(edit("Cargo.toml"), None);
    // `/x` in project rules is relative to the project root, not the file-system root.
    assert_eq!(edit("docs/guide.md"), allow("Edit(/docs/**)"));
    assert_eq!(edit("/docs/guide.md"), None);
    // A bare pattern without a slash matches at any depth.
    assert_eq!(edit("config/prod.env"), allow("write_file(*.env)"));
    assert_eq!(read("/etc/hosts"), allow("Read(//etc/**)"));
    // A directory pattern covers what is under it; `~` is the home directory.
    assert_eq!(read("~/.ssh/id_rsa"), deny("read(~/.ssh)"));
    assert_eq!(
        read(&workspace.home.join(".ssh/config").display().to_string()),
        deny("read(~/.ssh)")
    );
    assert_eq!(read("~/.sshx"), None);
    // Several keys: every one must be allowed.
    assert_eq!(
        opinion(&rules, &workspace, "apply_patch", &["edit:src/a.rs", "edit:docs/b.md"]),
        allow("edit(src/**)")
    );
    assert_eq!(
        opinion(&rules, &workspace, "apply_patch", &["edit:src/a.rs", "edit:Cargo.toml"]),
        None
    );
}

#[test]
fn user_rules_take_slash_as_absolute_and_bare_paths_from_the_cwd() {
    let workspace = Workspace::new();
    let rules = set(&["edit(src/**)"], &[], &["edit(/docs/**)"], RuleOrigin::User);
    assert_eq!(opinion(&rules, &workspace, "edit", &["edit:src/a.rs"]), allow("edit(src/**)"));
    assert_eq!(opinion(&rules, &workspace, "edit", &["edit:/docs/a.md"]), deny("edit(/docs/**)"));
    assert_eq!(opinion(&rules, &workspace, "edit", &["edit:docs/a.md"]), None);
}

#[test]
fn dot_dot_and_symlinks_cannot_dodge_path_rules() {
    let workspace = Workspace::new();
    let project = RuleOrigin::Project { root: workspace.ws.clone() };
    fs_err::create_dir_all(workspace.ws.join("secrets")).expect("mkdir");
    std::os::unix::fs::symlink(workspace.ws.join("secrets"), workspace.ws.join("innocent"))
        .expect("symlink");
    std::os::unix::fs::symlink(&workspace.outside, workspace.ws.join("src/escape"))
        .expect("symlink");
    let rules = set(&["edit(src/**)"], &[], &["read(secrets/**)", "edit(secrets/**)"], project);
    // `../` is resolved before matching.
    assert_eq!(opinion(&rules, &workspace, "edit", &["edit:src/../Cargo.toml"]), None);
    assert_eq!(
        opinion(&rules, &workspace, "read_file", &["read:src/../secrets/key"]),
        deny("read(secrets/**)")
    );
    // A symlink into a denied directory is still that directory.
    assert_eq!(
        opinion(&rules, &workspace, "read_file", &["read:innocent/key"]),
        deny("read(secrets/**)")
    );
    assert_eq!(
        opinion(&rules, &workspace, "edit", &["edit:innocent/new-file"]),
        deny("edit(secrets/**)")
    );
    // A symlink out of an allowed directory leaves it.
    assert_eq!(opinion(&rules, &workspace, "edit", &["edit:src/escape/x"]), None);
    assert_eq!(opinion(&rules, &workspace, "edit", &["edit:src/fine.rs"]), allow("edit(src/**)"));
}

#[test]
fn fetch_patterns_match_hosts() {
    let workspace = Workspace::new();
    let rules = set(
        &["web_fetch(domain:docs.rs)", "WebFetch(domain:*.rs-lang.org)"],
        &[],
        &[],
        RuleOrigin::User,
    );
    let fetch =
        |host: &str| opinion(&rules, &workspace, "web_fetch", &[&format!("web_fetch:{host}")]);
    assert_eq!(fetch("docs.rs"), allow("web_fetch(domain:docs.rs)"));
    assert_eq!(fetch("DOCS.RS"), allow("web_fetch(domain:docs.rs)"));
    assert_eq!(fetch("evil-docs.rs"), None);
    assert_eq!(fetch("sub.docs.rs"), None);
    assert_eq!(fetch("www.rs-lang.org"), allow("WebFetch(domain:*.rs-lang.org)"));
    assert_eq!(fetch("a.b.rs-lang.org"), allow("WebFetch(domain:*.rs-lang.org)"));
    assert_eq!(fetch("rs-lang.org"), None);
    assert_eq!(fetch("evilrs-lang.org"), None);
}

#[test]
fn read_deny_rules_name_the_paths_a_sandbox_hides() {
    let workspace = Workspace::new();
    let outside = workspace.outside.display().to_string();
    let deny = [
        "read(~/secrets/**)",
        "Read(~/.env)",
        &format!("read(/{outside}/keys)"),
        "read(config/prod/**)",
        "read(**/*.pem)",
        "read(*.key)",
        "edit(~/notes/**)",
        "run_command(cat *)",
    ];
    let user = set(&[], &[], &deny, RuleOrigin::User);
    let ctx = workspace.ctx();
    assert_eq!(
        user.denied_read_paths(&ctx),
        [
            workspace.home.join("secrets"),
            workspace.home.join(".env"),
            workspace.outside.join("keys"),
            workspace.ws.join("config/prod"),
        ]
    );
    // In project rules, `/x` and bare paths are under the project root.
    let project = set(
        &[],
        &[],
        &["read(/private/**)", "read(build/cache)"],
        RuleOrigin::Project { root: workspace.ws.clone() },
    );
    assert_eq!(
        project.denied_read_paths(&ctx),
        [workspace.ws.join("private"), workspace.ws.join("build/cache")]
    );
}

#[test]
fn bare_subject_rules_cover_a_call_by_its_views_kind() {
    let workspace = Workspace::new();
    let ctx = workspace.ctx();
    let opinion = |rules: &RuleSet, tool: &str, kind: CallKind| {
        let call = Call::new(tool, &kind, &[tool.to_owned()], &ctx);
        rules.evaluate(&call, &ctx).map(|(list, rule)| (list, rule.text().to_owned()))
    };
    // A tool no rule names, of the edit kind: `Edit` covers it, a rule naming one of our
    // edit tools does not.
    let edit = set(&["Edit"], &[], &[], RuleOrigin::User);
    assert_eq!(opinion(&edit, "relabel_files", CallKind::Edit), allow("Edit"));
    assert_eq!(opinion(&edit, "relabel_files", CallKind::Other), None);
    let write_file = set(&["write_file"], &[], &[], RuleOrigin::User);
    assert_eq!(opinion(&write_file, "relabel_files", CallKind::Edit), None);
    assert_eq!(opinion(&write_file, "write_file", CallKind::Edit), allow("write_file"));
    // Reads and searches are one subject; commands and fetches each another.
    let read = set(&[], &[], &["Read"], RuleOrigin::User);
    assert_eq!(opinion(&read, "find_symbols", CallKind::Search), deny("Read"));
    assert_eq!(opinion(&read, "find_symbols", CallKind::Execute), None);
    let shell = set(&["Bash", "WebFetch"], &[], &[], RuleOrigin::User);
    assert_eq!(opinion(&shell, "job_kill", CallKind::Execute), allow("Bash"));
    assert_eq!(opinion(&shell, "download", CallKind::Fetch), allow("WebFetch"));
    assert_eq!(
        opinion(&shell, "lookup", CallKind::Mcp { server: "s".to_owned(), tool: "t".to_owned() }),
        None
    );
}
