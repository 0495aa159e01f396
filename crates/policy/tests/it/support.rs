//! A temporary workspace: `ws/` (the cwd and a writable root), `tmp/` (another root), `home/`
//! (the home directory), and `outside/`.

use std::path::PathBuf;

use codecoder_policy::{CommandContext, ToolKind};
use codecoder_protocol::{CallKind, CallView};

pub(crate) struct Workspace {
    // Kept alive for the directories' lifetime.
    _dir: tempfile::TempDir,
    pub(crate) ws: PathBuf,
    pub(crate) tmp: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) outside: PathBuf,
}

impl Workspace {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        // Canonical, so expected paths compare equal to resolved ones.
        let root = fs_err::canonicalize(dir.path()).expect("canonicalize");
        let ws = root.join("ws");
        let tmp = root.join("tmp");
        let home = root.join("home");
        let outside = root.join("outside");
        for path in [&ws, &tmp, &home, &outside, &ws.join("src"), &ws.join(".git")] {
            fs_err::create_dir_all(path).expect("mkdir");
        }
        Self { _dir: dir, ws, tmp, home, outside }
    }

    pub(crate) fn ctx(&self) -> CommandContext {
        CommandContext {
            cwd: self.ws.clone(),
            writable_roots: vec![self.ws.clone(), self.tmp.clone()],
            home: Some(self.home.clone()),
        }
    }
}

/// The view a call of `tool` (of `kind`) has, as far as the policy reads it: the kind our
/// tools give their calls, and for an MCP tool (`mcp__server__tool`) its server and tool, marked
/// destructive when its kind is `Other` (what the MCP client makes of `destructiveHint`).
pub(crate) fn view(tool: &str, kind: ToolKind) -> CallView {
    if let Some(rest) = tool.strip_prefix("mcp__") {
        let (server, name) = rest.split_once("__").unwrap_or((rest, ""));
        return CallView {
            kind: CallKind::Mcp { server: server.to_owned(), tool: name.to_owned() },
            read_only: kind == ToolKind::ReadOnly,
            destructive: kind == ToolKind::Other,
            ..CallView::default()
        };
    }
    let call_kind = match tool {
        "run_command" | "job_output" | "job_kill" => CallKind::Execute,
        "write_file" | "edit" | "apply_patch" => CallKind::Edit,
        "read_file" => CallKind::Read,
        "list_dir" | "grep" | "glob" => CallKind::Search,
        "web_fetch" => CallKind::Fetch,
        "ask_user" | "exit_plan_mode" => CallKind::Ask,
        "update_plan" => CallKind::Plan,
        _ => CallKind::Other,
    };
    CallView { kind: call_kind, read_only: kind == ToolKind::ReadOnly, ..CallView::default() }
}
