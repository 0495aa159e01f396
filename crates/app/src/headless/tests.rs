//! Unit tests of the headless turn's `--output-schema` check.

use serde_json::json;

use crate::{check_final_message, read_output_schema};

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
