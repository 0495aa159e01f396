//! Tool names and arguments, between ours and Claude Code's.
//!
//! Hook scripts written for Claude Code look at `tool_name == "Bash"` and
//! `tool_input.command`, `tool_input.file_path`, … so the input a hook sees uses Claude's names
//! wherever one of our tools has a Claude counterpart, and what a hook sends back
//! (`updatedInput`) is translated back to our argument names.
//!
//! | ours | Claude |
//! |---|---|
//! | `run_command{command, timeout_ms, background, cwd, env}` | `Bash{command, timeout, run_in_background, cwd, env}` |
//! | `read_file{path, offset, limit}` | `Read{file_path, offset, limit}` |
//! | `write_file{path, content}` | `Write{file_path, content}` |
//! | `edit{path, old_string, new_string, replace_all}` | `Edit{file_path, …}` |
//! | `glob{pattern, path, head_limit}` | `Glob{pattern, path, head_limit}` |
//! | `grep{pattern, path, glob, type, case_insensitive, context, output, head_limit}` | `Grep{pattern, path, glob, type, -i, -C, output_mode, head_limit}` |
//! | `web_fetch{url, max_bytes}` | `WebFetch{url, max_bytes}` |
//! | `list_dir{…}` | `LS{…}` (the name only: the arguments pass unchanged) |
//! | `agent{task, agent_type, model, tools}` | `Task{prompt, subagent_type, model, tools}` |
//!
//! The names come from `codecoder_protocol`'s one table of Claude tool names (which the
//! permission rules and `permissions check` use too); this module adds the arguments.
//! Arguments of ours without a Claude counterpart (`cwd`, `env`, `max_bytes`, …) are passed
//! under our own name. Grep's `output` values are renamed (`files` ↔ `files_with_matches`) and
//! `output_mode` is always present, since Claude's default differs from ours. Every other tool
//! keeps our name and arguments unchanged, and a tool whose name maps but whose arguments
//! are not listed here keeps its arguments.
//!
//! Back from a hook, Claude-only keys that have no meaning for us (`description`, `prompt`,
//! `-n`) are dropped quietly; any other unknown key is dropped with a warning.
//!
//! Invariant: for every argument our tools accept, `from_claude(to_claude(x)) == x`.

use serde_json::{Map, Value};

/// The arguments of one tool with a Claude counterpart (its Claude name comes from
/// [`codecoder_protocol::claude_tool_name`], the one table of tool names).
struct Mapped {
    ours: &'static str,
    /// `(our argument, Claude's argument)`.
    keys: &'static [(&'static str, &'static str)],
    /// Claude arguments with no counterpart here that are dropped without a warning.
    quiet: &'static [&'static str],
}

const MAPPED: &[Mapped] = &[
    Mapped {
        ours: "agent",
        keys: &[
            ("task", "prompt"),
            ("agent_type", "subagent_type"),
            ("model", "model"),
            ("tools", "tools"),
        ],
        quiet: &["description"],
    },
    Mapped {
        ours: "run_command",
        keys: &[
            ("command", "command"),
            ("timeout_ms", "timeout"),
            ("background", "run_in_background"),
            ("cwd", "cwd"),
            ("env", "env"),
        ],
        quiet: &["description"],
    },
    Mapped {
        ours: "read_file",
        keys: &[("path", "file_path"), ("offset", "offset"), ("limit", "limit")],
        quiet: &[],
    },
    Mapped {
        ours: "write_file",
        keys: &[("path", "file_path"), ("content", "content")],
        quiet: &[],
    },
    Mapped {
        ours: "edit",
        keys: &[
            ("path", "file_path"),
            ("old_string", "old_string"),
            ("new_string", "new_string"),
            ("replace_all", "replace_all"),
        ],
        quiet: &[],
    },
    Mapped {
        ours: "glob",
        keys: &[("pattern", "pattern"), ("path", "path"), ("head_limit", "head_limit")],
        quiet: &[],
    },
    Mapped {
        ours: "grep",
        keys: &[
            ("pattern", "pattern"),
            ("path", "path"),
            ("glob", "glob"),
            ("type", "type"),
            ("case_insensitive", "-i"),
            ("context", "-C"),
            ("output", "output_mode"),
            ("head_limit", "head_limit"),
        ],
        quiet: &["-n"],
    },
    Mapped {
        ours: "web_fetch",
        keys: &[("url", "url"), ("max_bytes", "max_bytes")],
        quiet: &["prompt"],
    },
];

/// Grep's `output` values: `(ours, Claude's)`.
const GREP_OUTPUT: &[(&str, &str)] =
    &[("content", "content"), ("files", "files_with_matches"), ("count", "count")];

fn by_ours(tool: &str) -> Option<&'static Mapped> {
    MAPPED.iter().find(|mapped| mapped.ours == tool)
}

/// The name a hook sees for our tool `tool`: Claude's when one maps (`run_command` → `Bash`,
/// `list_dir` → `LS`), else `tool` itself.
pub use codecoder_protocol::claude_tool_name;

/// True when argument `argument` of our tool `tool` survives the round trip through a hook:
/// the tool has no Claude counterpart, or the mapping table knows the argument. A test that
/// sees both this crate and the tool schemas should assert it for every schema property, so
/// that a new tool argument is not silently dropped from a hook's `updatedInput`.
pub fn covers(tool: &str, argument: &str) -> bool {
    by_ours(tool).is_none_or(|mapped| mapped.keys.iter().any(|(ours, _)| *ours == argument))
}

/// Our tool's arguments as Claude's tool would take them (see the module table). Arguments
/// that are not an object are passed unchanged.
pub fn to_claude(tool: &str, args: &Value) -> Value {
    let (Some(mapped), Value::Object(args)) = (by_ours(tool), args) else {
        return args.clone();
    };
    let mut input = Map::new();
    for (key, value) in args {
        let claude_key =
            mapped.keys.iter().find(|(ours, _)| ours == key).map_or(key.as_str(), |(_, c)| c);
        let value = match (mapped.ours, key.as_str(), value) {
            ("grep", "output", Value::String(output)) => Value::String(rename(output, false)),
            _ => value.clone(),
        };
        input.insert(claude_key.to_owned(), value);
    }
    if mapped.ours == "grep" && !input.contains_key("output_mode") {
        input.insert("output_mode".to_owned(), Value::String("content".to_owned()));
    }
    Value::Object(input)
}

/// A hook's `updatedInput` for our tool `tool`, in our argument names, plus one warning per
/// key that was dropped. An input that is not an object is an error message.
pub fn from_claude(tool: &str, input: &Value) -> Result<(Value, Vec<String>), String> {
    let Value::Object(input) = input else {
        return Err(format!("`updatedInput` must be a JSON object, not {}", kind_of(input)));
    };
    let Some(mapped) = by_ours(tool) else {
        return Ok((Value::Object(input.clone()), Vec::new()));
    };
    let mut args = Map::new();
    let mut warnings = Vec::new();
    for (key, value) in input {
        let Some((ours, _)) = mapped.keys.iter().find(|(_, claude)| claude == key) else {
            if !mapped.quiet.contains(&key.as_str()) {
                warnings.push(format!(
                    "`updatedInput.{key}` has no counterpart in {} ({tool}); it was dropped",
                    claude_tool_name(tool)
                ));
            }
            continue;
        };
        let value = match (mapped.ours, *ours, value) {
            ("grep", "output", Value::String(output)) => Value::String(rename(output, true)),
            _ => value.clone(),
        };
        args.insert((*ours).to_owned(), value);
    }
    Ok((Value::Object(args), warnings))
}

/// Renames a Grep output value; `back` goes from Claude's to ours. Unknown values pass as they
/// are (the tool's own validation reports them).
fn rename(value: &str, back: bool) -> String {
    let found =
        GREP_OUTPUT.iter().find(|(ours, claude)| if back { *claude } else { *ours } == value);
    match found {
        Some((ours, claude)) => if back { ours } else { claude }.to_string(),
        None => value.to_owned(),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
