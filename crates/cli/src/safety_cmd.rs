//! `codecoder sandbox -- CMD`, `codecoder doctor` and `codecoder permissions check`: the safety
//! machinery, usable by hand, exactly as a session would set it up.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use codecoder_policy::Verdict;
use codecoder_sandbox::{CommandSpec, Confinement, Outcome, Sandbox, SpawnConfig, Stream};

use crate::cli::{GlobalArgs, PermissionsCheckArgs, SandboxArgs};
use crate::config_cmd::{cwd, home, load_config};
use crate::exec::Exit;
use crate::safety::{self, Safety};

/// The exit code of a command that could not be confined (as for a command that cannot run).
const EXIT_UNCONFINED: u8 = 126;

fn session_safety(global: &GlobalArgs, interactive: bool) -> anyhow::Result<(Safety, String)> {
    let home = home()?;
    let cwd = cwd(global)?;
    let loaded = load_config(global, &home, &cwd)?;
    for notice in &loaded.notices {
        eprintln!("note: {notice}");
    }
    let safety = safety::build(&global.safety, &loaded, &cwd, &home, interactive)?;
    Ok((safety, cwd.to_string_lossy().into_owned()))
}

pub(crate) fn run_sandbox(args: &SandboxArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let (safety, cwd) = session_safety(global, false)?;
    for warning in &safety.warnings {
        eprintln!("warning: {warning}");
    }
    let confinement = match &safety.confinement {
        Confinement::Sandboxed(sandbox) => {
            let mut policy = sandbox.policy().clone();
            policy.network = args.network;
            Confinement::Sandboxed(Arc::new(Sandbox::new(
                policy,
                sandbox.backend().clone(),
                sandbox.stage_exe().to_owned(),
            )))
        }
        _ if safety.modes.sandbox == codecoder_policy::SandboxMode::DangerFullAccess => {
            Confinement::Unconfined
        }
        _ => {
            return Err(Exit {
                code: EXIT_UNCONFINED,
                message: format!(
                    "no sandbox backend works here, so the command was not run ({})",
                    safety.probe.notes.join("; ")
                ),
            }
            .into());
        }
    };
    let (program, rest) = args.command.split_first().context("no command given")?;
    let mut spec = CommandSpec::new(program.clone(), rest.iter().cloned());
    spec.cwd = Some(cwd.into());
    let config = SpawnConfig {
        confinement,
        environment: safety.command_env.environment(),
        ..SpawnConfig::standard()
    };
    let mut child = codecoder_sandbox::spawn(&spec, &config)?;

    // Ctrl-C or a TERM ends the command's whole group, sandbox and all.
    let (cancel_tx, cancel) = crossbeam_channel::bounded::<()>(1);
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .context("installing the signal handler")?;
    let handle = signals.handle();
    let watcher = codecoder_stdx::spawn_named("sandbox-signals", move || {
        if signals.forever().next().is_some() {
            drop(cancel_tx);
        }
    })?;
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let outcome = child.wait(&cancel, &mut |chunk| {
        // A closed stdout or stderr is the reader's business; the command goes on.
        let _ = match chunk.stream {
            Stream::Stdout => stdout.lock().write_all(&chunk.bytes),
            Stream::Stderr => stderr.lock().write_all(&chunk.bytes),
        };
    })?;
    handle.close();
    let _ = watcher.join();
    let code = match outcome {
        Outcome::Exited(status) => {
            use std::os::unix::process::ExitStatusExt as _;
            match (status.code(), status.signal()) {
                (Some(code), _) => u8::try_from(code).unwrap_or(1),
                (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
                (None, None) => 1,
            }
        }
        Outcome::Cancelled => 130,
    };
    Ok(ExitCode::from(code))
}

pub(crate) fn run_doctor(global: &GlobalArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let home = home()?;
    let cwd = cwd(global)?;
    let loaded = load_config(global, &home, &cwd)?;
    writeln!(out, "codecoder {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "home: {}", home.display())?;
    let root = codecoder_config::project_root(&cwd);
    let trust = if loaded.project_trusted { "trusted" } else { "not trusted" };
    writeln!(out, "project: {} ({trust})", root.display())?;
    writeln!(out, "config layers:")?;
    if loaded.layers.is_empty() {
        writeln!(out, "  (none: defaults only)")?;
    }
    for (origin, _) in &loaded.layers {
        writeln!(out, "  {origin}")?;
    }
    for notice in &loaded.notices {
        writeln!(out, "  note: {notice}")?;
    }

    let interactive = safety::build(&global.safety, &loaded, &cwd, &home, true)?;
    let headless = safety::build(&global.safety, &loaded, &cwd, &home, false)?;
    writeln!(out, "sandbox:")?;
    match &interactive.probe.backend {
        Some(backend) => writeln!(out, "  backend: {} (active)", backend.name())?,
        None => writeln!(out, "  backend: none — commands cannot be sandboxed here")?,
    }
    for note in &interactive.probe.notes {
        writeln!(out, "  {note}")?;
    }
    let modes = |safety: &Safety| {
        format!(
            "sandbox {}, approvals {}{}",
            safety.modes.sandbox.as_str(),
            safety.modes.approval.as_str(),
            if safety.modes.bypass { ", bypass (yolo)" } else { "" }
        )
    };
    writeln!(out, "modes:")?;
    writeln!(out, "  interactive: {}", modes(&interactive))?;
    writeln!(out, "  exec: {}", modes(&headless))?;
    let policy = &interactive.sandbox_policy;
    writeln!(out, "  network for commands: {}", if policy.network { "on" } else { "off" })?;
    writeln!(out, "writable roots:")?;
    let roots = policy.existing_writable_roots();
    if roots.is_empty() {
        writeln!(out, "  (none: {})", interactive.modes.sandbox.as_str())?;
    }
    for root in roots {
        writeln!(out, "  {}", root.display())?;
    }
    // The same guard the approval chain, the file tools and the sandbox use.
    writeln!(out, "protected (edits asked, denied under never; read-only to commands):")?;
    for path in policy.protected_subpaths() {
        match policy.protection(&path) {
            Some(protection) => writeln!(out, "  {} — {}", path.display(), protection.rule_text())?,
            None => writeln!(out, "  {}", path.display())?,
        }
    }
    writeln!(
        out,
        "  below every writable root, existing or not: {}, .claude/settings*.json",
        codecoder_policy::protect::PROTECTED_DIRS
            .iter()
            .chain(&codecoder_policy::protect::PROTECTED_FILES)
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    writeln!(out, "  codecoder's home, wherever it is: {}", home.display())?;
    writeln!(out, "hidden from commands and read tools:")?;
    for path in &policy.hidden_paths {
        let state = if path.exists() { "" } else { " (absent)" };
        writeln!(out, "  {}{state}", path.display())?;
    }
    // Names only: a value may be a secret.
    let withheld = &interactive.command_env.withheld;
    if withheld.is_empty() {
        writeln!(out, "withheld from commands: (none)")?;
    } else {
        writeln!(out, "withheld from commands: {}", withheld.join(", "))?;
    }
    let hooks = safety::load_hooks(&loaded, &cwd)?;
    writeln!(out, "hooks:")?;
    if hooks.is_empty() {
        writeln!(out, "  (none)")?;
    } else {
        for line in hooks.summary().lines() {
            writeln!(out, "  {line}")?;
        }
    }
    writeln!(out, "permission rules:")?;
    let mut any = false;
    for (origin, layer) in &loaded.layers {
        let Some(rules) = &layer.permissions else { continue };
        for (list, items) in [("allow", &rules.allow), ("ask", &rules.ask), ("deny", &rules.deny)] {
            for rule in items {
                any = true;
                writeln!(out, "  {list} {rule}  ({origin})")?;
            }
        }
    }
    if !any {
        writeln!(out, "  (none: the defaults of the modes decide)")?;
    }
    for warning in &interactive.warnings {
        writeln!(out, "warning: {warning}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Our tool name for one of Claude Code's.
fn our_tool_name(name: &str) -> &str {
    match name {
        "Bash" => "run_command",
        "Read" => "read_file",
        "Write" => "write_file",
        "Edit" | "MultiEdit" => "edit",
        "Glob" => "glob",
        "Grep" => "grep",
        "LS" => "list_dir",
        "WebFetch" => "web_fetch",
        other => other,
    }
}

pub(crate) fn run_permissions_check(
    args: &PermissionsCheckArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let usage = |message: String| Exit { code: 2, message };
    let value: serde_json::Value = serde_json::from_str(&args.args)
        .map_err(|err| usage(format!("ARGS-JSON is not JSON: {err}")))?;
    let (safety, cwd) = session_safety(global, !args.exec)?;
    let name = our_tool_name(&args.tool);
    let tools = codecoder_tools::builtin_tools(codecoder_tools::ToolsConfig::standard(
        &cwd,
        vec![std::path::PathBuf::from("/")],
    ));
    let Some(tool) = tools.iter().find(|tool| tool.name() == name) else {
        let known: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
        return Err(
            usage(format!("unknown tool `{}` (known: {})", args.tool, known.join(", "))).into()
        );
    };
    if let Err(err) = codecoder_kernel::validate_schema(&tool.schema(), &value) {
        return Err(usage(format!("the arguments do not fit `{name}`: {err}")).into());
    }
    let keys = tool.permission_keys(&value);
    let decision = safety.policy.decide_call(name, tool.kind(), &keys, None, false);
    writeln!(out, "{decision}")?;
    writeln!(out, "  tool: {name} ({:?})", tool.kind())?;
    writeln!(out, "  keys: {}", keys.join(", "))?;
    writeln!(
        out,
        "  modes: sandbox {}, approvals {}{}",
        safety.modes.sandbox.as_str(),
        safety.modes.approval.as_str(),
        if safety.modes.bypass { ", bypass" } else { "" }
    )?;
    writeln!(out, "  (PreToolUse hooks and session grants come first in a session; not run here)")?;
    Ok(ExitCode::from(match decision.verdict {
        Verdict::Allow => 0,
        Verdict::Deny => 1,
        Verdict::Ask => 3,
    }))
}
