//! Claude Code's command line, as the Agent SDKs and `claude -p` scripts write it: both token
//! styles (`--flag=value` and `--flag value`), empty values, repeated list flags, and the few
//! codecoder flags that make sense here (`--config`, `--provider`, `--profile`, `--cd`).
//!
//! Invariant: every token is either understood, known to be harmless (kept for a debug note),
//! or a usage error that names it; nothing is silently dropped.

use std::path::PathBuf;

/// How the final answer is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The final text only.
    #[default]
    Text,
    /// One `result` object at the end.
    Json,
    /// Every message as a JSON line, as it happens.
    StreamJson,
}

/// Where prompts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputFormat {
    /// The argument and/or stdin, as one prompt.
    #[default]
    Text,
    /// JSON lines: user messages and control requests.
    StreamJson,
}

/// Claude's permission modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaudeMode {
    /// Ask (through `can_use_tool`) or deny what needs a person.
    Default,
    /// Edits inside the workspace run without asking.
    AcceptEdits,
    /// Only read-only tools run; the model plans.
    Plan,
    /// Nothing is asked: no sandbox, no approvals.
    BypassPermissions,
    /// Nothing is asked: what is not allowed by a rule is denied.
    DontAsk,
}

impl ClaudeMode {
    /// The mode named `text`, as Claude spells it (`auto` is taken as `default`).
    pub fn parse(text: &str) -> Option<ClaudeMode> {
        Some(match text {
            "default" | "auto" => ClaudeMode::Default,
            "acceptEdits" => ClaudeMode::AcceptEdits,
            "plan" => ClaudeMode::Plan,
            "bypassPermissions" => ClaudeMode::BypassPermissions,
            "dontAsk" => ClaudeMode::DontAsk,
            _ => return None,
        })
    }

    /// Claude's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaudeMode::Default => "default",
            ClaudeMode::AcceptEdits => "acceptEdits",
            ClaudeMode::Plan => "plan",
            ClaudeMode::BypassPermissions => "bypassPermissions",
            ClaudeMode::DontAsk => "dontAsk",
        }
    }
}

/// The parsed command line of a headless run.
#[derive(Debug, Clone, Default)]
pub struct HeadlessArgs {
    /// `-p/--print` was given.
    pub print: bool,
    /// The prompt argument.
    pub prompt: Option<String>,
    /// `--output-format`.
    pub output: OutputFormat,
    /// `--input-format`.
    pub input: InputFormat,
    /// `--verbose`.
    pub verbose: bool,
    /// `--model`.
    pub model: Option<String>,
    /// `--fallback-model`.
    pub fallback_model: Option<String>,
    /// `--permission-mode`.
    pub permission_mode: Option<ClaudeMode>,
    /// `--allowedTools`, split on commas and spaces outside parentheses.
    pub allowed_tools: Vec<String>,
    /// `--disallowedTools`.
    pub disallowed_tools: Vec<String>,
    /// `--tools`: the built-in tools offered (`None`: all; `default`: all).
    pub tools: Option<Vec<String>>,
    /// `--max-turns`.
    pub max_turns: Option<u32>,
    /// `--max-budget-usd`.
    pub max_budget_usd: Option<f64>,
    /// `--system-prompt` (or the file of `--system-prompt-file`, read).
    pub system_prompt: Option<String>,
    /// `--append-system-prompt` (or its file, read).
    pub append_system_prompt: Option<String>,
    /// `--mcp-config` values, each JSON text or a file.
    pub mcp_configs: Vec<String>,
    /// `--strict-mcp-config`.
    pub strict_mcp_config: bool,
    /// `--setting-sources`.
    pub setting_sources: Option<Vec<String>>,
    /// `--settings`: JSON text or a file.
    pub settings: Option<String>,
    /// `--add-dir`.
    pub add_dirs: Vec<PathBuf>,
    /// `--resume`.
    pub resume: Option<String>,
    /// `--continue`.
    pub continue_session: bool,
    /// `--fork-session`.
    pub fork_session: bool,
    /// `--session-id`.
    pub session_id: Option<String>,
    /// `--no-session-persistence`.
    pub no_persistence: bool,
    /// `--include-partial-messages`.
    pub include_partial_messages: bool,
    /// `--replay-user-messages`.
    pub replay_user_messages: bool,
    /// `--json-schema`: JSON text or a file.
    pub json_schema: Option<String>,
    /// `--permission-prompt-tool`: `stdio` asks the SDK (`can_use_tool`).
    pub permission_prompt_tool: Option<String>,
    /// `--await-initialize`.
    pub await_initialize: bool,
    /// `--dangerously-skip-permissions`.
    pub skip_permissions: bool,
    /// codecoder's `--config KEY=VALUE` overrides.
    pub config: Vec<String>,
    /// codecoder's `--provider`.
    pub provider: Option<String>,
    /// codecoder's `--profile`.
    pub profile: Option<String>,
    /// codecoder's `--cd`.
    pub cd: Option<PathBuf>,
    /// Flags accepted and ignored, for a debug note.
    pub ignored: Vec<String>,
}

/// A usage error: the message names the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Flags with a value.
const VALUED: &[&str] = &[
    "--model",
    "--fallback-model",
    "--permission-mode",
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
    "--tools",
    "--max-turns",
    "--max-budget-usd",
    "--system-prompt",
    "--system-prompt-file",
    "--append-system-prompt",
    "--append-system-prompt-file",
    "--mcp-config",
    "--setting-sources",
    "--settings",
    "--add-dir",
    "--resume",
    "--session-id",
    "--json-schema",
    "--permission-prompt-tool",
    "--input-format",
    "--output-format",
    "--config",
    "--provider",
    "--profile",
    "--cd",
];

/// Flags without a value.
const BARE: &[&str] = &[
    "--print",
    "--verbose",
    "--continue",
    "--fork-session",
    "--include-partial-messages",
    "--replay-user-messages",
    "--strict-mcp-config",
    "--await-initialize",
    "--no-session-persistence",
    "--dangerously-skip-permissions",
    "--allow-dangerously-skip-permissions",
];

/// Flags of Claude Code that change nothing codecoder does (UI, telemetry, Anthropic-only
/// features): accepted, with or without their value, and noted at debug level.
const HARMLESS_VALUED: &[&str] = &[
    "--max-thinking-tokens",
    "--betas",
    "--managed-settings",
    "--agent",
    "--agents",
    "--resume-session-at",
    "--resume-drops-turn",
    "--plugin-dir",
    "--output-style",
    "--debug-file",
    "--effort",
    "--sdk-url",
];
const HARMLESS_BARE: &[&str] = &[
    "--debug",
    "--debug-to-stderr",
    "--ide",
    "--disable-slash-commands",
    "--enable-auth-status",
    "--exclude-dynamic-system-prompt-sections",
    "--mcp-debug",
];

/// Short options and the long flag they stand for.
const SHORT: &[(&str, &str)] = &[
    ("-p", "--print"),
    ("-c", "--continue"),
    ("-r", "--resume"),
    ("-d", "--debug"),
    ("-C", "--cd"),
];

/// True when `args` (without the program name) ask for Claude Code's headless mode: `-p` or
/// `--print`, or `--input-format`/`--output-format` (codecoder's own subcommands have none of
/// them), and no argument names one of `subcommands`.
pub fn is_headless(args: &[String], subcommands: &[&str]) -> bool {
    let mut asked = false;
    for arg in args {
        if arg == "--" {
            break;
        }
        if subcommands.contains(&arg.as_str()) {
            return false;
        }
        let flag = arg.split_once('=').map_or(arg.as_str(), |(flag, _)| flag);
        asked |= matches!(flag, "-p" | "--print" | "--input-format" | "--output-format");
    }
    asked
}

/// Parses the command line (without the program name).
///
/// # Errors
/// An unknown flag, a missing or bad value, or more than one prompt.
pub fn parse(args: &[String]) -> Result<HeadlessArgs, UsageError> {
    let mut parsed = HeadlessArgs::default();
    let mut iter = args.iter().peekable();
    let mut rest_is_prompt = false;
    while let Some(arg) = iter.next() {
        if rest_is_prompt || !arg.starts_with('-') || arg == "-" {
            set_prompt(&mut parsed, arg)?;
            continue;
        }
        if arg == "--" {
            rest_is_prompt = true;
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let flag = SHORT
            .iter()
            .find(|(short, _)| *short == flag)
            .map_or(flag.clone(), |(_, long)| (*long).to_owned());
        if BARE.contains(&flag.as_str()) || HARMLESS_BARE.contains(&flag.as_str()) {
            if inline.is_some() {
                return Err(UsageError(format!("{flag} takes no value (in `{arg}`)")));
            }
            if HARMLESS_BARE.contains(&flag.as_str()) {
                parsed.ignored.push(flag);
            } else {
                set_bare(&mut parsed, &flag);
            }
            continue;
        }
        let valued = VALUED.contains(&flag.as_str());
        if !valued && !HARMLESS_VALUED.contains(&flag.as_str()) {
            return Err(UsageError(format!(
                "unknown option `{arg}` (see `codecoder --help` for Claude Code's flags codecoder accepts)"
            )));
        }
        let value = match inline {
            Some(value) => value,
            None => match iter.next() {
                Some(value) => value.clone(),
                None => return Err(UsageError(format!("{flag} needs a value"))),
            },
        };
        if valued {
            set_valued(&mut parsed, &flag, value)?;
        } else {
            parsed.ignored.push(flag);
        }
    }
    Ok(parsed)
}

fn set_prompt(parsed: &mut HeadlessArgs, arg: &str) -> Result<(), UsageError> {
    match &parsed.prompt {
        Some(first) => Err(UsageError(format!(
            "more than one prompt: `{first}` and `{arg}` (quote the prompt as one argument)"
        ))),
        None => {
            parsed.prompt = Some(arg.to_owned());
            Ok(())
        }
    }
}

fn set_bare(parsed: &mut HeadlessArgs, flag: &str) {
    match flag {
        "--print" => parsed.print = true,
        "--verbose" => parsed.verbose = true,
        "--continue" => parsed.continue_session = true,
        "--fork-session" => parsed.fork_session = true,
        "--include-partial-messages" => parsed.include_partial_messages = true,
        "--replay-user-messages" => parsed.replay_user_messages = true,
        "--strict-mcp-config" => parsed.strict_mcp_config = true,
        "--await-initialize" => parsed.await_initialize = true,
        "--no-session-persistence" => parsed.no_persistence = true,
        "--dangerously-skip-permissions" => parsed.skip_permissions = true,
        // Allowing the flag is not using it.
        _ => {}
    }
}

/// A list flag's items: separated by commas or spaces, except inside a rule's parentheses
/// (`Bash(git log:*)`).
pub fn split_list(value: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in value.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            ',' | ' ' if depth == 0 => {
                if !current.trim().is_empty() {
                    items.push(current.trim().to_owned());
                }
                current.clear();
            }
            _ => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        items.push(current.trim().to_owned());
    }
    items
}

fn read_file(flag: &str, path: &str) -> Result<String, UsageError> {
    fs_err::read_to_string(path).map_err(|err| UsageError(format!("{flag}: {err}")))
}

fn set_valued(parsed: &mut HeadlessArgs, flag: &str, value: String) -> Result<(), UsageError> {
    let nonempty = |value: String| (!value.is_empty()).then_some(value);
    match flag {
        "--model" => parsed.model = nonempty(value),
        "--fallback-model" => parsed.fallback_model = nonempty(value),
        "--permission-mode" => {
            parsed.permission_mode = Some(ClaudeMode::parse(&value).ok_or_else(|| {
                UsageError(format!(
                    "--permission-mode: `{value}` is not one of default, acceptEdits, plan, bypassPermissions, dontAsk"
                ))
            })?);
        }
        "--allowedTools" | "--allowed-tools" => parsed.allowed_tools.extend(split_list(&value)),
        "--disallowedTools" | "--disallowed-tools" => {
            parsed.disallowed_tools.extend(split_list(&value));
        }
        "--tools" => {
            let items = split_list(&value);
            parsed.tools = if items == ["default"] { None } else { Some(items) };
        }
        "--max-turns" => {
            let turns = value.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                UsageError(format!("--max-turns: `{value}` is not a positive whole number"))
            })?;
            parsed.max_turns = Some(turns);
        }
        "--max-budget-usd" => {
            let budget = value.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0);
            parsed.max_budget_usd = Some(budget.ok_or_else(|| {
                UsageError(format!("--max-budget-usd: `{value}` is not an amount of dollars"))
            })?);
        }
        "--system-prompt" => parsed.system_prompt = Some(value),
        "--system-prompt-file" => parsed.system_prompt = Some(read_file(flag, &value)?),
        "--append-system-prompt" => parsed.append_system_prompt = nonempty(value),
        "--append-system-prompt-file" => {
            parsed.append_system_prompt = Some(read_file(flag, &value)?);
        }
        "--mcp-config" => parsed.mcp_configs.push(value),
        "--setting-sources" => parsed.setting_sources = Some(split_list(&value)),
        "--settings" => parsed.settings = nonempty(value),
        "--add-dir" => parsed.add_dirs.push(PathBuf::from(value)),
        "--resume" => parsed.resume = nonempty(value),
        "--session-id" => parsed.session_id = nonempty(value),
        "--json-schema" => parsed.json_schema = nonempty(value),
        "--permission-prompt-tool" => parsed.permission_prompt_tool = nonempty(value),
        "--input-format" => {
            parsed.input = match value.as_str() {
                "text" => InputFormat::Text,
                "stream-json" => InputFormat::StreamJson,
                _ => {
                    return Err(UsageError(format!(
                        "--input-format: `{value}` is not one of text, stream-json"
                    )));
                }
            };
        }
        "--output-format" => {
            parsed.output = match value.as_str() {
                "text" => OutputFormat::Text,
                "json" => OutputFormat::Json,
                "stream-json" => OutputFormat::StreamJson,
                _ => {
                    return Err(UsageError(format!(
                        "--output-format: `{value}` is not one of text, json, stream-json"
                    )));
                }
            };
        }
        "--config" => parsed.config.push(value),
        "--provider" => parsed.provider = nonempty(value),
        "--profile" => parsed.profile = nonempty(value),
        "--cd" => parsed.cd = nonempty(value).map(PathBuf::from),
        _ => parsed.ignored.push(flag.to_owned()),
    }
    Ok(())
}

/// What `--help` says about the headless mode.
pub const HELP: &str = "\
Claude Code's headless mode (for `claude -p` scripts and the Claude Agent SDKs):
  codecoder -p \"task\" [--output-format text|json|stream-json]
  codecoder --output-format stream-json --verbose --input-format stream-json
Entered by -p/--print, --input-format or --output-format. The prompt is the argument, stdin,
or both. Accepted: --model, --fallback-model, --permission-mode (default, acceptEdits, plan,
bypassPermissions, dontAsk), --allowedTools, --disallowedTools, --tools, --max-turns,
--max-budget-usd, --system-prompt[-file], --append-system-prompt[-file], --mcp-config,
--strict-mcp-config, --setting-sources, --settings, --add-dir, -r/--resume, -c/--continue,
--fork-session, --session-id, --no-session-persistence, --include-partial-messages,
--replay-user-messages, --json-schema, --permission-prompt-tool stdio, --await-initialize,
--verbose, --dangerously-skip-permissions; codecoder's --config KEY=VALUE, --provider,
--profile, --cd. In this mode -c is --continue and -p is --print (not -c KEY=VALUE or
--profile). Exit codes: 0 success, 1 an error result, 2 a usage error.";
