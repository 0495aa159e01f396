//! The safety wiring (issue 7, seed L3/L5): the two axes (sandbox mode, approval mode) from
//! flags, profile and config; hooks from every source; the permission rules of each layer; the
//! sandbox every command runs in. `stack.rs` puts the results into the agent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use codecoder_config::LoadedConfig;
use codecoder_hooks::{CommonInput, HookRunner, HookSet, HookSources, KernelHooks};

/// Every hook configured for this project: `[hooks]` of each config layer (the project's only
/// when trusted), `.codecoder/hooks.json`, `.claude/settings.json`, `.claude/settings.local.json`
/// and `~/.claude/settings.json`. Warnings go to stderr.
pub(crate) fn load_hooks(loaded: &LoadedConfig, cwd: &Path) -> anyhow::Result<Arc<HookSet>> {
    let mut table = serde_json::Map::new();
    let mut origin = None;
    for (layer_origin, layer) in &loaded.layers {
        for (event, groups) in &layer.hooks {
            let entry =
                table.entry(event.clone()).or_insert_with(|| serde_json::Value::Array(Vec::new()));
            if let serde_json::Value::Array(list) = entry {
                list.extend(groups.iter().filter_map(|g| serde_json::to_value(g).ok()));
            }
            origin.get_or_insert_with(|| PathBuf::from(layer_origin.to_string()));
        }
    }
    let config_hooks = origin.map(|origin| (serde_json::Value::Object(table), origin));
    let sources = HookSources {
        project_dir: codecoder_config::project_root(cwd),
        home: std::env::var_os(codecoder_protocol::env::HOME).map(PathBuf::from),
        config_hooks,
        read_claude_settings: true,
        project_trusted: loaded.project_trusted,
    };
    let (set, warnings) = HookSet::load(&sources).context("loading hooks")?;
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    Ok(Arc::new(set))
}

/// The kernel's hooks for a session: `None` when no hook is configured (the kernel then runs
/// `NoHooks`, which costs nothing).
pub(crate) fn kernel_hooks(
    set: &Arc<HookSet>,
    session_id: String,
    transcript_path: Option<&Path>,
    cwd: &Path,
    permission_mode: &str,
    sessions_dir: PathBuf,
) -> Option<KernelHooks> {
    if set.is_empty() {
        return None;
    }
    let common = CommonInput {
        session_id,
        transcript_path: transcript_path.map(Path::to_owned).unwrap_or_default(),
        cwd: cwd.to_owned(),
        permission_mode: permission_mode.to_owned(),
    };
    Some(KernelHooks::new(HookRunner::new(Arc::clone(set), common), sessions_dir))
}
