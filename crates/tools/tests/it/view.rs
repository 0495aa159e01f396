//! Each built-in's view of a call: the kind, title, detail, paths and changes front-ends and
//! the policy read instead of the tool's name and raw arguments.

use codecoder_protocol::{CallKind, CallView, ChangeKind, FileChange, PlanStep, TextEdit};
use codecoder_tools::view_of;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::Fixture;

fn view(name: &str, args: Value) -> CallView {
    let fixture = Fixture::new();
    view_of(fixture.tool(name), &args)
}

#[test]
fn a_read_names_its_file_and_line_and_only_reads() {
    let view = view("read_file", json!({"path": "src/lib.rs", "offset": 40}));
    assert_eq!(view.kind, CallKind::Read);
    assert_eq!(view.title, "Read src/lib.rs");
    assert_eq!(view.detail, "src/lib.rs");
    assert_eq!(view.paths, ["src/lib.rs"]);
    assert_eq!(view.line, Some(40));
    assert!(view.read_only);
    assert!(!view.destructive);
}

#[test]
fn an_edit_is_a_replacement_and_a_diff() {
    let view =
        view("edit", json!({"path": "a.rs", "old_string": "x - y\nz", "new_string": "x + y"}));
    assert_eq!(view.kind, CallKind::Edit);
    assert_eq!(view.title, "Edit a.rs");
    assert!(!view.read_only);
    assert_eq!(
        view.changes,
        [FileChange {
            path: "a.rs".to_owned(),
            kind: ChangeKind::Update { move_to: None },
            diff: "-x - y\n-z\n+x + y\n".to_owned(),
            header: String::new(),
            edits: vec![TextEdit { old: Some("x - y\nz".to_owned()), new: "x + y".to_owned() }],
        }]
    );
}

#[test]
fn a_written_file_is_added_whole() {
    let view = view("write_file", json!({"path": "new.txt", "content": "one\ntwo\n"}));
    assert_eq!(view.title, "Write new.txt");
    assert_eq!(view.changes[0].kind, ChangeKind::Add);
    assert_eq!(view.changes[0].diff, "+one\n+two\n");
    assert_eq!(view.changes[0].edits, [TextEdit { old: None, new: "one\ntwo\n".to_owned() }]);
}

#[test]
fn a_patch_shows_each_file_it_changes_moves_included() {
    let input = "*** Begin Patch\n*** Update File: src/a.rs\n*** Move to: src/b.rs\n@@ fn main\n \
                 keep\n-old\n+new\n*** Add File: notes.txt\n+hello\n*** Delete File: gone.txt\n\
                 *** End Patch\n";
    let view = view("apply_patch", json!({ "input": input }));
    assert_eq!(view.kind, CallKind::Edit);
    assert_eq!(view.title, "Patch src/a.rs, src/b.rs, notes.txt, gone.txt");
    assert_eq!(view.detail, "src/a.rs, src/b.rs, notes.txt, gone.txt");
    assert_eq!(view.paths, ["src/a.rs", "src/b.rs", "notes.txt", "gone.txt"]);
    let kinds: Vec<_> = view.changes.iter().map(|c| (c.path.as_str(), c.kind.clone())).collect();
    assert_eq!(
        kinds,
        [
            ("src/a.rs", ChangeKind::Update { move_to: Some("src/b.rs".to_owned()) }),
            ("notes.txt", ChangeKind::Add),
            ("gone.txt", ChangeKind::Delete),
        ]
    );
    let update = &view.changes[0];
    assert_eq!(update.header, "*** Update File: src/a.rs\n*** Move to: src/b.rs\n");
    assert_eq!(update.diff, "@@ fn main\n keep\n-old\n+new\n");
    assert_eq!(
        update.edits,
        [TextEdit { old: Some("keep\nold".to_owned()), new: "keep\nnew".to_owned() }]
    );
    assert_eq!(view.changes[1].edits, [TextEdit { old: None, new: "hello\n".to_owned() }]);
}

#[test]
fn a_patch_that_does_not_parse_still_names_its_files_but_changes_nothing() {
    let input = "*** Begin Patch\n*** Update File: src/a.rs\n*** End Patch\n";
    let view = view("apply_patch", json!({ "input": input }));
    assert_eq!(view.paths, ["src/a.rs"]);
    assert_eq!(view.title, "Patch src/a.rs");
    assert!(view.changes.is_empty());
}

#[test]
fn searches_commands_and_fetches_say_what_they_look_for() {
    let glob = view("glob", json!({"pattern": "**/*.rs"}));
    assert_eq!((glob.kind, glob.title.as_str()), (CallKind::Search, "Find `**/*.rs`"));
    let grep = view("grep", json!({"pattern": "fn main", "path": "src"}));
    assert_eq!((grep.title.as_str(), grep.detail.as_str()), ("Search `fn main`", "fn main"));
    let list = view("list_dir", json!({"path": "src"}));
    assert_eq!((list.title.as_str(), list.paths.clone()), ("List src", vec!["src".to_owned()]));
    let run = view("run_command", json!({"command": "cargo test\n--all"}));
    assert_eq!(run.kind, CallKind::Execute);
    assert_eq!(run.title, "Run `cargo test\n--all`");
    assert_eq!(run.detail, "$ cargo test");
    assert_eq!(run.command.as_deref(), Some("cargo test\n--all"));
    assert!(!run.read_only);
    let job = view("job_output", json!({"id": 3}));
    assert_eq!((job.kind, job.detail.as_str()), (CallKind::Execute, "3"));
    let fetch = view("web_fetch", json!({"url": "https://example.com"}));
    assert_eq!((fetch.kind, fetch.title.as_str()), (CallKind::Fetch, "Fetch https://example.com"));
}

#[test]
fn a_plan_update_carries_its_steps() {
    let view = view(
        "update_plan",
        json!({"explanation": "tests first", "plan": [
            {"step": "write the test", "status": "completed"},
            {"step": "fix it", "status": "in_progress"}
        ]}),
    );
    assert_eq!(view.kind, CallKind::Plan);
    assert_eq!(view.title, "Update the plan");
    let plan = view.plan.unwrap();
    assert_eq!(plan.explanation, "tests first");
    assert_eq!(
        plan.steps,
        [
            PlanStep { text: "write the test".to_owned(), status: "completed".to_owned() },
            PlanStep { text: "fix it".to_owned(), status: "in_progress".to_owned() },
        ]
    );
}

#[test]
fn a_question_shows_its_first_line() {
    let view = view("ask_user", json!({"question": "Which colour?\nPick one."}));
    assert_eq!((view.kind, view.detail.as_str()), (CallKind::Ask, "Which colour?"));
}

#[test]
fn views_of_arguments_of_the_wrong_shape_are_empty_not_errors() {
    for name in ["read_file", "edit", "write_file", "apply_patch", "run_command", "update_plan"] {
        let view = view(name, json!([1, 2]));
        assert!(view.paths.is_empty(), "{name}");
        assert!(!view.title.is_empty(), "{name}");
    }
}

#[test]
fn a_patch_being_written_shows_its_files_so_far_and_ends_as_its_view() {
    let fixture = Fixture::new();
    let tool = fixture.tool("apply_patch");
    let mut reader = tool.input_reader().expect("apply_patch reads streamed arguments");
    let input = "*** Begin Patch\n*** Add File: notes.txt\n+hello\n+world\n*** Update File: src/a.rs\n\
                 *** Move to: src/b.rs\n@@\n-old\n+new\n*** End Patch\n";
    let args = json!({ "input": input });
    let json = args.to_string();
    // The JSON arrives in pieces of seven bytes, split inside escapes too.
    let mut views = Vec::new();
    let mut rest = json.as_str();
    while !rest.is_empty() {
        let mut at = rest.len().min(7);
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        let (piece, tail) = rest.split_at(at);
        reader.push(piece);
        views.extend(reader.view());
        rest = tail;
    }
    // Nothing before the first file line; then one view per new line at most.
    let first = &views[0];
    assert_eq!(first.paths, ["notes.txt"]);
    assert_eq!(first.changes[0].kind, ChangeKind::Add);
    assert!(views.iter().any(|view| view.changes.len() == 1 && view.changes[0].diff == "+hello\n"));
    assert!(views.len() <= input.lines().count());
    // No new line since the last view: nothing new to show.
    assert_eq!(reader.view(), None);
    // Once whole, the streamed view is the call's view.
    let whole = view_of(tool, &args);
    assert_eq!(views.last(), Some(&whole));
    assert_eq!(whole.paths, ["notes.txt", "src/a.rs", "src/b.rs"]);
}
