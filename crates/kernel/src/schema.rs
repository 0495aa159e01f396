//! A small JSON Schema validator for tool arguments: the subset tool schemas use.
//!
//! Supported keywords: `type` (a name or a list; `integer` is a number without a fraction),
//! `enum`, `const`, `required`, `properties`, `additionalProperties` (bool or schema), `items`,
//! `minItems`, `maxItems`, `minLength`, `maxLength`, `minimum`, `maximum`. Other keywords are
//! ignored (accepted), so a richer schema never makes a valid call fail. Why not the
//! `jsonschema` crate: it pulls in regex engines, URL resolution and optional HTTP for remote
//! `$ref`s, a large dependency for checking a handful of keywords on small objects.
//!
//! Invariant: the error message names the path (`args.paths[2]`) and what was expected, so the
//! model can fix its call.

use serde_json::Value;

/// Checks `value` against `schema`. `Err` holds a message for the model.
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, value, "args")
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "number" => value.is_number(),
        other => type_name(value) == other,
    }
}

fn check(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let Value::Object(schema) = schema else {
        // `true`, `{}` and anything we do not understand accept everything; `false` nothing.
        return match schema {
            Value::Bool(false) => Err(format!("`{path}` is not allowed")),
            _ => Ok(()),
        };
    };
    match schema.get("type") {
        Some(Value::String(name)) if !has_type(value, name) => {
            return Err(format!("`{path}` must be {name}, found {}", type_name(value)));
        }
        Some(Value::Array(names)) => {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            if !names.iter().any(|name| has_type(value, name)) {
                return Err(format!(
                    "`{path}` must be one of {}, found {}",
                    names.join(", "),
                    type_name(value)
                ));
            }
        }
        _ => {}
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return Err(format!("`{path}` must be one of {}, found {value}", allowed.join(", ")));
    }
    if let Some(expected) = schema.get("const")
        && expected != value
    {
        return Err(format!("`{path}` must be {expected}, found {value}"));
    }
    match value {
        Value::Object(object) => {
            if let Some(Value::Array(required)) = schema.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    if !object.contains_key(name) {
                        return Err(format!("`{path}.{name}` is required"));
                    }
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            for (name, item) in object {
                let item_path = format!("{path}.{name}");
                match properties.and_then(|p| p.get(name)) {
                    Some(item_schema) => check(item_schema, item, &item_path)?,
                    None => match schema.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            // Sorted: the same text whatever order serde_json keeps keys in.
                            let mut known: Vec<&str> = properties
                                .map(|p| p.keys().map(String::as_str).collect())
                                .unwrap_or_default();
                            known.sort_unstable();
                            return Err(format!(
                                "`{item_path}` is not a known property (known: {})",
                                known.join(", ")
                            ));
                        }
                        Some(extra) => check(extra, item, &item_path)?,
                        None => {}
                    },
                }
            }
        }
        Value::Array(items) => {
            let count = items.len() as u64;
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && count < min
            {
                return Err(format!("`{path}` needs at least {min} items, found {count}"));
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && count > max
            {
                return Err(format!("`{path}` allows at most {max} items, found {count}"));
            }
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}[{index}]"))?;
                }
            }
        }
        Value::String(text) => {
            let length = text.chars().count() as u64;
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && length < min
            {
                return Err(format!("`{path}` needs at least {min} characters"));
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && length > max
            {
                return Err(format!("`{path}` allows at most {max} characters"));
            }
        }
        Value::Number(number) => {
            let number = number.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
                && number < min
            {
                return Err(format!("`{path}` must be at least {min}"));
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
                && number > max
            {
                return Err(format!("`{path}` must be at most {max}"));
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
    Ok(())
}
