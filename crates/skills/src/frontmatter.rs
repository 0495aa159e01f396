//! The YAML frontmatter of SKILL.md, agent and command files: the subset these files use.
//!
//! Supported: `key: value` scalars (plain, `"double"` with escapes, `'single'`), flow lists
//! (`[a, b]`), block lists (`- item` lines), one level of nested maps (`metadata:` with
//! indented `k: v` lines), block scalars (`|`, `>`, with `-`/`+` chomping), comments and blank
//! lines. A plain value that itself holds `: ` is kept whole (Agent Skills clients retry such
//! values as quoted). Anything else is an error naming its line (1-based, counted in the file,
//! so the opening `---` is line 1).
//!
//! Invariant: parsing never panics and never reads past the closing `---`; the body is the
//! text after it, unchanged.

use std::collections::BTreeMap;

/// A frontmatter value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A scalar (quoted or not; `true`, numbers and the like stay text).
    Scalar(String),
    /// A list of scalars.
    List(Vec<String>),
    /// A map of scalars (`metadata`).
    Map(BTreeMap<String, String>),
}

impl Value {
    /// The scalar, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Scalar(text) => Some(text),
            Self::List(_) | Self::Map(_) => None,
        }
    }

    /// A list as is; a scalar split on commas and whitespace (`allowed-tools: Read Grep`,
    /// `tools: Read, Grep`), keeping `Bash(git add:*)` whole.
    pub fn as_list(&self) -> Vec<String> {
        match self {
            Self::List(items) => items.clone(),
            Self::Scalar(text) => split_names(text),
            Self::Map(_) => Vec::new(),
        }
    }

    /// `true`/`false` (`yes`/`no` too).
    pub fn as_bool(&self) -> Option<bool> {
        match self.as_str()?.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" => Some(true),
            "false" | "no" | "off" => Some(false),
            _ => None,
        }
    }
}

/// Splits `Read, Grep Bash(git add:*)` into names; parentheses group.
fn split_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = String::new();
    let mut depth = 0_u32;
    for ch in text.chars() {
        match ch {
            '(' => {
                depth += 1;
                current.push(ch);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(ch);
            }
            ',' | ' ' | '\t' if depth == 0 => {
                if !current.is_empty() {
                    names.push(std::mem::take(&mut current));
                }
            }
            _ => current.push(ch),
        }
    }
    if !current.is_empty() {
        names.push(current);
    }
    names
}

/// A parsed file: its frontmatter keys, in order of appearance, and its body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Document {
    /// Keys and values, with the line of each key.
    pub fields: Vec<(String, Value, usize)>,
    /// The text after the closing `---`.
    pub body: String,
}

impl Document {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(name, _, _)| name == key).map(|(_, value, _)| value)
    }

    /// The scalar of `key`, trimmed, `None` when missing or empty.
    pub fn str(&self, key: &str) -> Option<String> {
        self.get(key)?.as_str().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
    }

    /// The line of `key`.
    pub fn line(&self, key: &str) -> Option<usize> {
        self.fields.iter().find(|(name, _, _)| name == key).map(|(_, _, line)| *line)
    }
}

/// A frontmatter error: what and on which line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line in the file.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Parses `text`: frontmatter between `---` lines at the very top, then the body. A file
/// without frontmatter is all body.
pub fn parse(text: &str) -> Result<Document, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Ok(Document::default());
    };
    if first.trim_end() != "---" {
        return Ok(Document { fields: Vec::new(), body: text.to_owned() });
    }
    let mut header: Vec<&str> = Vec::new();
    let mut consumed = first.len();
    let mut closed = false;
    for line in lines {
        consumed += line.len();
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        header.push(line.trim_end_matches(['\n', '\r']));
    }
    if !closed {
        return Err(ParseError { line: 1, message: "the frontmatter has no closing `---`".into() });
    }
    let fields = parse_header(&header)?;
    Ok(Document { fields, body: text[consumed..].to_owned() })
}

/// The header lines (after the opening `---`, so header line `i` is file line `i + 2`).
fn parse_header(lines: &[&str]) -> Result<Vec<(String, Value, usize)>, ParseError> {
    let mut fields: Vec<(String, Value, usize)> = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        let file_line = index + 2;
        index += 1;
        if is_blank(line) {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(ParseError { line: file_line, message: "unexpected indentation".into() });
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(ParseError {
                line: file_line,
                message: format!("expected `key: value`, found `{}`", line.trim()),
            });
        };
        let key = key.trim();
        if key.is_empty() || key.contains(' ') {
            return Err(ParseError { line: file_line, message: format!("bad key `{key}`") });
        }
        if fields.iter().any(|(name, _, _)| name == key) {
            return Err(ParseError { line: file_line, message: format!("`{key}` appears twice") });
        }
        let rest = rest.trim();
        // Indented lines that follow belong to this key.
        let start = index;
        while index < lines.len()
            && (is_blank(lines[index]) || lines[index].starts_with([' ', '\t']))
        {
            index += 1;
        }
        let block = &lines[start..index];
        let value = if let Some(style) = rest.strip_prefix(['|', '>']) {
            let folded = rest.starts_with('>');
            block_scalar(block, folded, style.trim())
        } else if rest.is_empty() {
            nested(block, start + 2)?
        } else if let Some(inner) = rest.strip_prefix('[') {
            let Some(inner) = strip_comment(inner).trim_end().strip_suffix(']') else {
                return Err(ParseError { line: file_line, message: "unclosed `[`".into() });
            };
            let mut items = Vec::new();
            for item in inner.split(',').map(str::trim).filter(|item| !item.is_empty()) {
                items.push(scalar(item, file_line)?);
            }
            Value::List(items)
        } else {
            // A plain scalar may continue on indented lines.
            let mut text = scalar(rest, file_line)?;
            for extra in block.iter().filter(|line| !is_blank(line)) {
                text.push(' ');
                text.push_str(extra.trim());
            }
            Value::Scalar(text)
        };
        fields.push((key.to_owned(), value, file_line));
    }
    Ok(fields)
}

fn is_blank(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.is_empty() || trimmed.starts_with('#')
}

/// `text` without a trailing ` # comment`.
fn strip_comment(text: &str) -> &str {
    text.find(" #").map_or(text, |at| &text[..at])
}

/// One scalar: quoted (with escapes for double quotes) or plain (trailing comment dropped).
fn scalar(text: &str, line: usize) -> Result<String, ParseError> {
    let text = text.trim();
    if let Some(inner) = text.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(ch) = chars.next() {
            match ch {
                '"' => {
                    let rest: String = chars.collect();
                    let rest = rest.trim();
                    if !rest.is_empty() && !rest.starts_with('#') {
                        return Err(ParseError {
                            line,
                            message: format!("text after a closing quote: `{rest}`"),
                        });
                    }
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(other) => out.push(other),
                    None => break,
                },
                _ => out.push(ch),
            }
        }
        return Err(ParseError { line, message: "unclosed `\"`".into() });
    }
    if let Some(inner) = text.strip_prefix('\'') {
        let Some(end) = find_single_close(inner) else {
            return Err(ParseError { line, message: "unclosed `'`".into() });
        };
        return Ok(inner[..end].replace("''", "'"));
    }
    Ok(strip_comment(text).trim().to_owned())
}

/// The closing quote of a single-quoted scalar (`''` is an escaped quote).
fn find_single_close(inner: &str) -> Option<usize> {
    let bytes = inner.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'\'' {
            if bytes.get(at + 1) == Some(&b'\'') {
                at += 2;
                continue;
            }
            return Some(at);
        }
        at += 1;
    }
    None
}

/// `|` or `>` block: the indented lines, dedented; `>` joins lines with spaces.
fn block_scalar(block: &[&str], folded: bool, chomp: &str) -> Value {
    let indent = block
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> =
        block.iter().map(|line| if line.len() >= indent { &line[indent..] } else { "" }).collect();
    let mut text = if folded {
        let mut out = String::new();
        for line in &lines {
            if line.is_empty() {
                out.push('\n');
            } else {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push(' ');
                }
                out.push_str(line);
            }
        }
        out
    } else {
        lines.join("\n")
    };
    let trimmed = text.trim_end_matches('\n').len();
    text.truncate(trimmed);
    match chomp {
        "-" => {}
        _ => text.push('\n'),
    }
    Value::Scalar(text)
}

/// The indented lines under an empty `key:`: a `- item` list or a `k: v` map.
fn nested(block: &[&str], first_line: usize) -> Result<Value, ParseError> {
    let mut items = Vec::new();
    let mut map = BTreeMap::new();
    for (offset, line) in block.iter().enumerate() {
        if is_blank(line) {
            continue;
        }
        let file_line = first_line + offset;
        let trimmed = line.trim();
        if let Some(item) = trimmed.strip_prefix('-') {
            if !map.is_empty() {
                return Err(ParseError { line: file_line, message: "a list item in a map".into() });
            }
            items.push(scalar(item, file_line)?);
        } else if let Some((key, value)) = trimmed.split_once(':') {
            if !items.is_empty() {
                return Err(ParseError {
                    line: file_line,
                    message: "a map entry in a list".into(),
                });
            }
            map.insert(key.trim().to_owned(), scalar(value, file_line)?);
        } else {
            return Err(ParseError {
                line: file_line,
                message: format!("expected `- item` or `key: value`, found `{trimmed}`"),
            });
        }
    }
    if map.is_empty() { Ok(Value::List(items)) } else { Ok(Value::Map(map)) }
}
