//! Unit tests of the headless turn's `--output-schema` check.

use serde_json::json;

use crate::{check_final_message, headless_prompt, read_output_schema};

#[test]
fn the_final_message_must_be_json_that_follows_the_schema() {
    let schema = json!({
        "type": "object",
        "properties": { "answer": { "type": "string" } },
        "required": ["answer"]
    });
    assert_eq!(check_final_message(&schema, " {\"answer\": \"42\"}\n"), Ok(()));
    let not_json = check_final_message(&schema, "forty-two").unwrap_err();
    assert!(not_json.starts_with("the final message is not JSON"), "{not_json}");
    let breaks = check_final_message(&schema, "{\"answer\": 42}").unwrap_err();
    assert!(breaks.starts_with("the final message does not follow --output-schema"), "{breaks}");
}

#[test]
fn a_schema_file_that_is_missing_or_not_json_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("schema.json");
    assert!(read_output_schema(&path).unwrap_err().is_usage());
    fs_err::write(&path, "{ not json").unwrap();
    let err = read_output_schema(&path).unwrap_err();
    assert!(err.is_usage() && err.to_string().contains("not a JSON Schema"), "{err}");
    fs_err::write(&path, "{\"type\": \"object\"}").unwrap();
    assert_eq!(read_output_schema(&path).unwrap(), json!({"type": "object"}));
}

#[test]
fn the_prompt_comes_from_the_argument_stdin_or_both() {
    let prompt = |arg: Option<&str>, stdin: &str, terminal: bool| {
        headless_prompt(arg, &mut stdin.as_bytes(), terminal)
    };
    assert_eq!(prompt(Some("fix it"), "ignored", true).unwrap(), "fix it");
    assert_eq!(prompt(Some("fix it"), " \n", false).unwrap(), "fix it");
    assert_eq!(
        prompt(Some("fix it"), "the log\n", false).unwrap(),
        "fix it\n\n<stdin>\nthe log\n</stdin>"
    );
    assert_eq!(prompt(None, "from a pipe\n", false).unwrap(), "from a pipe\n");
    assert_eq!(prompt(Some("-"), "from a pipe", false).unwrap(), "from a pipe");
    let none = prompt(None, "", true).unwrap_err();
    assert!(none.is_usage() && none.to_string().contains("give it as an argument"), "{none}");
    let empty = prompt(None, "  ", false).unwrap_err();
    assert!(empty.is_usage() && empty.to_string().contains("stdin was empty"), "{empty}");
}
