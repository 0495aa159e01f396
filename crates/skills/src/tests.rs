#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::Path;

use pretty_assertions::assert_eq;

use crate::frontmatter::{self, Value};
use crate::*;

fn write_skill(root: &Path, name: &str, frontmatter: &str, body: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), format!("---\n{frontmatter}\n---\n{body}")).unwrap();
}

#[test]
fn frontmatter_covers_the_subset_skill_files_use() {
    let text = "---\nname: pdf\ndescription: \"Fill \\\"PDF\\\" forms\"\nlicense: 'Apache-2.0'\n\
allowed-tools: Bash(git add:*) Read\ntools: [Read, Grep]\nlist:\n  - one\n  - \"two\"\n\
metadata:\n  author: me\n  version: 1.0\nbody: |\n  line one\n    indented\n\nfolded: >-\n  a\n  b\n\
odd: use when: asked # comment\n---\n# Title\n";
    let doc = frontmatter::parse(text).unwrap();
    assert_eq!(doc.str("name").as_deref(), Some("pdf"));
    assert_eq!(doc.str("description").as_deref(), Some("Fill \"PDF\" forms"));
    assert_eq!(doc.str("license").as_deref(), Some("Apache-2.0"));
    assert_eq!(doc.get("allowed-tools").unwrap().as_list(), vec!["Bash(git add:*)", "Read"]);
    assert_eq!(doc.get("tools").unwrap().as_list(), vec!["Read", "Grep"]);
    assert_eq!(doc.get("list").unwrap().as_list(), vec!["one", "two"]);
    let Value::Map(metadata) = doc.get("metadata").unwrap() else { panic!("a map") };
    assert_eq!(metadata["version"], "1.0");
    assert_eq!(doc.get("body").unwrap().as_str(), Some("line one\n  indented\n"));
    assert_eq!(doc.get("folded").unwrap().as_str(), Some("a b"));
    assert_eq!(doc.str("odd").as_deref(), Some("use when: asked"));
    assert_eq!(doc.line("odd"), Some(20));
    assert_eq!(doc.body, "# Title\n");
}

#[test]
fn frontmatter_errors_name_the_line() {
    let err = frontmatter::parse("---\nname: x\ndescription: \"open\n---\n").unwrap_err();
    assert_eq!(err.line, 3);
    let err = frontmatter::parse("---\nname: x\nnot a key\n---\n").unwrap_err();
    assert_eq!(err.line, 3);
    assert!(frontmatter::parse("---\nname: x\n").is_err(), "unclosed frontmatter");
    assert_eq!(frontmatter::parse("no frontmatter").unwrap().body, "no frontmatter");
}

#[test]
fn project_skills_win_over_the_users_and_bad_files_are_warnings_with_file_and_line() {
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let codecoder_home = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".git")).unwrap();
    let cwd = project.path().join("sub");
    std::fs::create_dir(&cwd).unwrap();
    write_skill(
        &project.path().join(".claude/skills"),
        "deploy",
        "name: deploy\ndescription: project deploy",
        "P",
    );
    write_skill(
        &home.path().join(".claude/skills"),
        "deploy",
        "name: deploy\ndescription: user deploy",
        "U",
    );
    write_skill(
        &codecoder_home.path().join("skills"),
        "lint",
        "name: lint\ndescription: run lints",
        "L",
    );
    write_skill(
        &cwd.join(".agents/skills"),
        "broken",
        "name: broken\ndescription: \"unclosed",
        "B",
    );
    write_skill(&home.path().join(".agents/skills"), "nodesc", "name: nodesc", "N");

    let roots = Roots::standard(&cwd, Some(codecoder_home.path()), Some(home.path()));
    let store = SkillStore::new(roots);
    let (skills, warnings) = store.scan();
    assert_eq!(skills.keys().cloned().collect::<Vec<_>>(), vec!["deploy", "lint"]);
    assert_eq!(skills["deploy"].description, "project deploy");
    assert_eq!(skills["deploy"].scope, Scope::Project);
    assert_eq!(skills["lint"].scope, Scope::User);
    let texts: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    let broken = cwd.join(".agents/skills/broken/SKILL.md");
    assert!(
        texts.iter().any(|t| t.starts_with(&format!("{}:3: ", broken.display()))),
        "{texts:#?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("nodesc") && t.contains("no description")),
        "{texts:#?}"
    );
    assert!(texts.iter().any(|t| t.contains("shadowed")), "{texts:#?}");
}

#[test]
fn a_changed_file_is_read_again() {
    let root = tempfile::tempdir().unwrap();
    let skills_dir = root.path().join(".codecoder/skills");
    write_skill(&skills_dir, "a", "name: a\ndescription: first", "one");
    let store = SkillStore::new(Roots::standard(root.path(), None, None));
    assert_eq!(store.get("a").unwrap().description, "first");
    write_skill(&skills_dir, "a", "name: a\ndescription: second, longer", "two");
    assert_eq!(store.get("a").unwrap().description, "second, longer");
    assert!(matches!(store.get("zzz"), Err(Error::UnknownSkill { .. })));
}

#[test]
fn a_name_that_differs_from_its_folder_is_a_warning_and_the_folder_wins() {
    let (skill, warnings) = parse_skill(
        Path::new("/x/my-skill/SKILL.md"),
        "---\nname: other\ndescription: d\ndisable-model-invocation: true\nuser-invocable: false\n---\nbody",
        Scope::User,
    )
    .unwrap();
    assert_eq!(skill.name, "my-skill");
    assert!(skill.disable_model_invocation && !skill.user_invocable);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].line, Some(2));
}

#[test]
fn bm25_ranks_the_matching_document_first() {
    let docs = vec![
        "pdf fill forms in pdf files".to_owned(),
        "deploy the service to kubernetes".to_owned(),
        "write commit messages for git".to_owned(),
    ];
    assert_eq!(bm25_rank(&docs, "please deploy to kubernetes")[0], 1);
    assert_eq!(bm25_rank(&docs, "a git commit")[0], 2);
    assert_eq!(bm25_rank(&docs, ""), vec![0, 1, 2]);
}

fn skill(name: &str, description: &str) -> Skill {
    parse_skill(
        &Path::new("/s").join(name).join("SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\nSECRET BODY of {name}"),
        Scope::Project,
    )
    .unwrap()
    .0
}

#[test]
fn the_catalogue_lists_all_within_budget_and_the_best_ranked_over_it() {
    let mut skills = vec![skill("pdf", "Fill PDF forms"), skill("deploy", "Deploy to kubernetes")];
    for i in 0..50 {
        skills.push(skill(&format!("filler-{i:02}"), "Generic helper for unrelated chores"));
    }
    let refs: Vec<&Skill> = skills.iter().collect();
    let all = Catalogue::select(&refs, "", 100_000);
    assert_eq!(all.listed.len(), 52);
    assert_eq!(all.left_out, 0);
    assert!(!all.text.contains("SECRET BODY"));

    let some = Catalogue::select(&refs, "deploy my app to kubernetes", 800);
    assert!(some.listed.contains(&"deploy".to_owned()), "{:?}", some.listed);
    assert!(some.left_out > 0);
    assert!(some.text.len() <= 800, "{}", some.text.len());
    assert!(some.text.contains(&format!("{} more skills", some.left_out)), "{}", some.text);
}

#[test]
fn substitutions_and_mentions() {
    let mut s = skill("fix", "fix issues");
    s.body = "Fix $ARGUMENTS (first $0) in ${CLAUDE_SKILL_DIR} for ${CLAUDE_SESSION_ID}".into();
    let text = activation_text(&s, "issue 42", "sess-1");
    assert!(text.contains("Fix issue 42 (first issue) in /s/fix for sess-1"), "{text}");
    let map = [("fix".to_owned(), s)].into_iter().collect();
    let (found, rest) = expand_mentions("please $fix the bug, $unknown stays", &map);
    assert_eq!(found.len(), 1);
    assert_eq!(rest, "please the bug, $unknown stays");
}

#[test]
fn agents_and_commands_are_found_with_their_frontmatter() {
    let root = tempfile::tempdir().unwrap();
    let agents = root.path().join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep\nmodel: inherit\npermissionMode: plan\nmaxTurns: 5\nskills:\n  - lint\nmcpServers:\n  - github\n---\nYou review.\n",
    )
    .unwrap();
    std::fs::write(agents.join("bad.md"), "---\nname: bad\nmaxTurns: many\ndescription: x\n---\n")
        .unwrap();
    let commands = root.path().join(".codecoder/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("greet.md"),
        "---\ndescription: Greets\n---\nSay hi to $1 ($ARGUMENTS)\n",
    )
    .unwrap();
    let roots = Roots::standard(root.path(), None, None);
    let (found, warnings) = load_agents(&roots);
    assert_eq!(found.len(), 1);
    let agent = &found[0];
    assert_eq!(agent.tools.as_deref(), Some(&["Read".to_owned(), "Grep".to_owned()][..]));
    assert_eq!((agent.model.clone(), agent.max_turns), (None, Some(5)));
    assert_eq!(agent.permission_mode.as_deref(), Some("plan"));
    assert_eq!(agent.skills, vec!["lint"]);
    assert_eq!(agent.mcp_servers, vec!["github"]);
    assert_eq!(agent.instructions, "You review.");
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].line, Some(3));
    let (commands, _) = load_commands(&roots);
    assert_eq!(commands[0].description, "Greets");
    assert_eq!(
        expand_command("/greet Ann Bo", &commands, "s").as_deref(),
        Some("Say hi to Ann (Ann Bo)")
    );
    assert_eq!(expand_command("/nope", &commands, "s"), None);
}
