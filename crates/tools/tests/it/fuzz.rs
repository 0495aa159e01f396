//! The argument fuzzer (issue 5, "Bad input"): random JSON, shaped like each tool's arguments
//! often enough to get past the schema, goes to every tool's `run_checked` (the code path of
//! the kernel's `execute`). No input may panic; every answer is an output or a `ToolError`.
//!
//! Hermetic: the shell is `true` (so random commands never run), URLs come from a loopback-only
//! pool, and paths are relative or from a fixed pool, so a search never walks the whole disk.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::support::*;

const KEYS: &[&str] = &[
    "path",
    "offset",
    "limit",
    "content",
    "old_string",
    "new_string",
    "replace_all",
    "depth",
    "pattern",
    "glob",
    "type",
    "case_insensitive",
    "context",
    "output",
    "head_limit",
    "command",
    "cwd",
    "timeout_ms",
    "env",
    "background",
    "id",
    "explanation",
    "plan",
    "step",
    "status",
    "question",
    "options",
    "url",
    "max_bytes",
    "unknown",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![Just(0u64), Just(1), Just(2), Just(u64::MAX), 0u64..5000]
            .prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just(String::new()),
            Just("a.txt".to_owned()),
            Just("hello".to_owned()),
            Just("in_progress".to_owned()),
            Just("content".to_owned()),
            Just("files".to_owned()),
            Just("rust".to_owned()),
            Just("(".to_owned()),
            Just("*.txt".to_owned()),
            Just("a\r\nb\0c".to_owned()),
            any::<String>(),
        ]
        .prop_map(Value::String),
    ]
}

fn any_json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..5).prop_map(|pairs| {
                Value::Object(
                    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

fn path_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("a.txt")),
        Just(json!("dir")),
        Just(json!("dir/b.txt")),
        Just(json!("link")),
        Just(json!("missing/x")),
        Just(json!("..")),
        Just(json!("../x")),
        Just(json!("")),
        Just(json!("a\0b")),
        Just(json!(".")),
        "[a-z]{1,6}(/[a-z.]{1,6})?".prop_map(Value::String),
        any_json(),
    ]
}

fn url_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("http://127.0.0.1:1/")),
        Just(json!("https://127.0.0.1:1/x")),
        Just(json!("ftp://127.0.0.1/")),
        Just(json!("http://")),
        Just(json!("http://[::1")),
        Just(json!("")),
        Just(json!(7)),
    ]
}

/// Objects with the known keys (values shaped or random), sometimes not objects at all.
fn args() -> impl Strategy<Value = Value> {
    let field = prop::sample::select(KEYS).prop_flat_map(|key| {
        let value: BoxedStrategy<Value> = match key {
            "path" | "cwd" => path_value().boxed(),
            "url" => url_value().boxed(),
            _ => any_json().boxed(),
        };
        (Just(key), value)
    });
    prop_oneof![
        4 => prop::collection::vec(field, 0..6).prop_map(|pairs| {
            Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>())
        }),
        1 => any_json().prop_filter("no bare path-like strings at the top", |value| !value.is_object()),
    ]
}

/// Values that fit `schema` (the subset tool schemas use), with `name` the property they are
/// for: so that most cases get past validation and into the tool's own handling.
fn from_schema(name: &str, schema: &Value) -> BoxedStrategy<Value> {
    match name {
        "path" | "cwd" => return path_value().prop_filter("fits", |v| v.is_string()).boxed(),
        "url" => return url_value().prop_filter("fits", |v| v.is_string()).boxed(),
        _ => {}
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        return prop::sample::select(options.clone()).boxed();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => prop_oneof![
            Just(String::new()),
            Just("hello".to_owned()),
            Just("world\n".to_owned()),
            Just("a\r\nb".to_owned()),
            Just("x".repeat(5000)),
            "[a-z \n.*()\\[\\]{}?+|^$]{0,20}",
            any::<String>(),
        ]
        .prop_map(Value::String)
        .boxed(),
        Some("integer") => {
            let min = schema.get("minimum").and_then(Value::as_u64).unwrap_or(0);
            let max = schema.get("maximum").and_then(Value::as_u64).unwrap_or(u64::MAX);
            prop_oneof![Just(min), Just(max), min..=max.min(min + 100_000), min..=max]
                .prop_map(|n| json!(n))
                .boxed()
        }
        Some("boolean") => any::<bool>().prop_map(Value::Bool).boxed(),
        Some("array") => {
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            prop::collection::vec(from_schema("", &items), 0..4).prop_map(Value::Array).boxed()
        }
        Some("object") => {
            let properties = schema.get("properties").and_then(Value::as_object).cloned();
            let Some(properties) = properties else {
                // A map of strings (`env`).
                return prop::collection::btree_map("[A-Z_=]{0,4}", "[a-z]{0,4}", 0..3)
                    .prop_map(|map| json!(map))
                    .boxed();
            };
            let required: Vec<String> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default();
            let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = properties
                .iter()
                .map(|(key, sub)| {
                    let key = key.clone();
                    let value = from_schema(&key, sub);
                    if required.contains(&key) {
                        value.prop_map(move |v| Some((key.clone(), v))).boxed()
                    } else {
                        prop::option::of(value.prop_map(move |v| (key.clone(), v))).boxed()
                    }
                })
                .collect();
            fields.prop_map(|fields| Value::Object(fields.into_iter().flatten().collect())).boxed()
        }
        _ => any_json().boxed(),
    }
}

#[test]
fn no_tool_panics_on_arguments_that_fit_the_schema() {
    let _heavy = HEAVY.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let fixture = fuzz_fixture();
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok());
    for tool in &fixture.tools {
        let config = ProptestConfig {
            cases: cases.unwrap_or(40),
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        let mut runner = proptest::test_runner::TestRunner::new(config);
        let ran = std::cell::Cell::new(0usize);
        runner
            .run(&from_schema("", &tool.schema()), |args| {
                // The tool itself runs on whatever fits the schema, its own check passed or
                // not (random text is rarely a patch): no panic either way.
                let result =
                    codecoder_tools::run_checked(tool.as_ref(), &fixture.env, args.clone());
                if codecoder_kernel::validate_schema(&tool.schema(), &args).is_ok() {
                    if result.is_err() && tool.check(&args).is_err() {
                        let _ = tool.run(&fixture.env, args);
                    }
                    ran.set(ran.get() + 1);
                }
                Ok(())
            })
            .unwrap();
        // Most generated calls get past validation into the tool itself.
        assert!(ran.get() > 0, "{}: every call was refused by validation", tool.name());
    }
}

fn fuzz_fixture() -> Fixture {
    let fixture = Fixture::with(|config| {
        config.shell = "true".into();
        config.web_timeout = std::time::Duration::from_secs(2);
        config.max_timeout = std::time::Duration::from_secs(5);
    });
    fixture.write("a.txt", "hello\nworld\n");
    fixture.write("dir/b.txt", "in_progress content\r\n");
    std::os::unix::fs::symlink(fixture.path("a.txt"), fixture.path("link")).unwrap();
    fixture
}

#[test]
fn no_tool_panics_on_any_arguments() {
    let _heavy = HEAVY.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let fixture = fuzz_fixture();
    // PROPTEST_CASES raises the count for a longer local run.
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok());
    let config = ProptestConfig {
        cases: cases.unwrap_or(400),
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let count = fixture.tools.len();
    runner
        .run(&(0..count, args()), |(tool_index, args)| {
            let tool = &fixture.tools[tool_index];
            let result = codecoder_tools::run_checked(tool.as_ref(), &fixture.env, args.clone());
            // Summaries, views and permission keys see unchecked arguments too.
            let _ = tool.summary(&args);
            let _ = codecoder_tools::view_of(tool.as_ref(), &args);
            let _ = tool.permission_keys(&args);
            if let Err(err) = result {
                prop_assert!(!err.to_string().is_empty());
            }
            Ok(())
        })
        .unwrap();
}
