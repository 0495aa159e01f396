//! Unit tests of the runtime's host services.

#[test]
fn init_writes_a_starter_agents_md_once() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("Cargo.toml"), "[workspace]\n").unwrap();
    let message = crate::init_agents_md(dir.path()).unwrap();
    assert!(message.starts_with("wrote "), "{message}");
    let text = fs_err::read_to_string(dir.path().join("AGENTS.md")).unwrap();
    assert!(text.contains("`cargo test`"), "{text}");
    fs_err::write(dir.path().join("AGENTS.md"), "mine").unwrap();
    let message = crate::init_agents_md(dir.path()).unwrap();
    assert!(message.contains("already exists"), "{message}");
    assert_eq!(
        fs_err::read_to_string(dir.path().join("AGENTS.md")).unwrap(),
        "mine",
        "never overwritten"
    );
}

#[test]
fn allowed_tools_entries_cover_calls_by_our_name_or_claudes_and_by_command_prefix() {
    use codecoder_protocol::{ToolCall, ToolCallId};
    let call = |name: &str, args: serde_json::Value| ToolCall {
        id: ToolCallId::new("c"),
        name: name.to_owned(),
        args,
    };
    let git_add = call("run_command", serde_json::json!({ "command": "git add src" }));
    let git_push = call("run_command", serde_json::json!({ "command": "git push" }));
    let git_addx = call("run_command", serde_json::json!({ "command": "git addx" }));
    let read = call("read_file", serde_json::json!({ "path": "a" }));
    let covers = crate::skills::covers;
    assert!(covers("Bash(git add:*)", &git_add));
    assert!(!covers("Bash(git add:*)", &git_push));
    assert!(!covers("Bash(git add:*)", &git_addx));
    assert!(covers("Bash", &git_push));
    assert!(covers("run_command(git add*)", &git_add));
    assert!(covers("Read", &read) && covers("read_file", &read));
    assert!(!covers("Write", &read));
}

/// A home and a repository (removed when the returned guard drops), the config loaded there.
fn mcp_setup(
    config: &str,
    mcp_json: &str,
    trusted: bool,
) -> (codecoder_config::LoadedConfig, std::path::PathBuf, [tempfile::TempDir; 2]) {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let home = dirs[0].path().to_owned();
    let repo = dirs[1].path().to_owned();
    fs_err::create_dir(repo.join(".git")).unwrap();
    fs_err::write(home.join("config.toml"), config).unwrap();
    if !mcp_json.is_empty() {
        fs_err::write(repo.join(".mcp.json"), mcp_json).unwrap();
    }
    if trusted {
        codecoder_config::trust(&home, &codecoder_config::project_root(&repo)).unwrap();
    }
    let options = codecoder_config::LoadOptions {
        system_path: home.join("no-system.toml"),
        home: Some(home),
        cwd: repo.clone(),
        profile: None,
        overrides: Vec::new(),
    };
    (codecoder_config::load(&options).unwrap(), repo, dirs)
}

#[test]
fn mcp_servers_get_the_base_environment_and_their_own_only() {
    let (loaded, cwd, _dirs) = mcp_setup(
        "[mcp_servers.a]\ncommand = \"srv\"\nenv = { OWN = \"1\" }\nstartup_timeout_sec = 2.5\n",
        "",
        false,
    );
    let lookup = |name: &str| match name {
        "HOME" | "PATH" | "OPENAI_API_KEY" => Some(std::ffi::OsString::from(format!("v-{name}"))),
        _ => None,
    };
    let (servers, notices) = crate::mcp::server_configs(&loaded, &cwd, &lookup);
    assert!(notices.is_empty(), "{notices:?}");
    let codecoder_mcp::Transport::Stdio { env, .. } = &servers[0].transport else { panic!() };
    let names: Vec<&str> = env.keys().map(String::as_str).collect();
    assert_eq!(names, ["HOME", "OWN", "PATH"]);
    assert_eq!(servers[0].startup_timeout, std::time::Duration::from_millis(2500));
}

#[test]
fn an_mcp_server_with_transport_sse_speaks_the_older_http_sse_transport() {
    let (loaded, cwd, _dirs) = mcp_setup(
        "[mcp_servers.old]\nurl = \"http://127.0.0.1:1/sse\"\ntransport = \"sse\"\n[mcp_servers.new]\nurl = \"http://127.0.0.1:1/mcp\"\n[mcp_servers.bad]\ncommand = \"x\"\ntransport = \"sse\"\n",
        "",
        false,
    );
    let lookup = |_: &str| None;
    let (servers, notices) = crate::mcp::server_configs(&loaded, &cwd, &lookup);
    let kinds: Vec<(&str, &str)> = servers
        .iter()
        .map(|s| match &s.transport {
            codecoder_mcp::Transport::Sse { url, .. } => (s.name.as_str(), url.as_str()),
            codecoder_mcp::Transport::Http { .. } => (s.name.as_str(), "http"),
            codecoder_mcp::Transport::Stdio { .. } => (s.name.as_str(), "stdio"),
            codecoder_mcp::Transport::InProcess(_) => (s.name.as_str(), "in-process"),
        })
        .collect();
    assert_eq!(kinds, [("new", "http"), ("old", "http://127.0.0.1:1/sse")]);
    assert_eq!(notices.len(), 1, "{notices:?}");
    let notice = notices[0].to_string();
    assert!(notice.contains("[mcp_servers.bad]") && notice.contains("`transport`"), "{notice}");
}

#[test]
fn a_projects_mcp_json_is_read_only_when_the_project_is_trusted() {
    let json = r#"{"mcpServers": {"p": {"command": "project-server"}}}"#;
    let lookup = |_: &str| None;
    let (untrusted, cwd, _dirs) = mcp_setup("", json, false);
    let (servers, notices) = crate::mcp::server_configs(&untrusted, &cwd, &lookup);
    assert!(servers.is_empty());
    // The person is told why.
    assert!(format!("{notices:?}").contains("is not read: this project is not trusted"));
    let (trusted, cwd, _trusted_dirs) = mcp_setup("", json, true);
    let (servers, _) = crate::mcp::server_configs(&trusted, &cwd, &lookup);
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].name, "p");
    // config.toml can switch a project's server off.
    let (off, cwd, _off_dirs) =
        mcp_setup("[mcp_servers.p]\nenabled = false\ncommand = \"x\"\n", json, true);
    let (servers, _) = crate::mcp::server_configs(&off, &cwd, &lookup);
    assert!(servers.is_empty());
}

#[test]
fn removing_an_mcp_table_keeps_everything_else() {
    let text = "a = 1\n[mcp_servers.x]\ncommand = \"x\"\n[mcp_servers.x.env]\nK = \"v\"\n[mcp_servers.xy]\ncommand = \"y\"\n[other]\nb = 2\n";
    assert_eq!(
        crate::mcp::without_table(text, "x"),
        "a = 1\n[mcp_servers.xy]\ncommand = \"y\"\n[other]\nb = 2\n"
    );
}

#[test]
fn the_users_claude_json_servers_are_read_and_config_toml_wins() {
    let (loaded, cwd, _dirs) =
        mcp_setup("[mcp_servers.both]\ncommand = \"from-config\"\n", "", false);
    let user_home = tempfile::tempdir().unwrap();
    fs_err::write(
        user_home.path().join(".claude.json"),
        r#"{"numStartups": 3, "mcpServers": {"mine": {"command": "user-server"}, "both": {"command": "from-claude"}}}"#,
    )
    .unwrap();
    let home = user_home.path().as_os_str().to_owned();
    let lookup = |name: &str| (name == "HOME").then(|| home.clone());
    let (servers, notices) = crate::mcp::server_configs(&loaded, &cwd, &lookup);
    assert!(notices.is_empty(), "{notices:?}");
    let commands: Vec<(String, String)> = servers
        .iter()
        .map(|s| match &s.transport {
            codecoder_mcp::Transport::Stdio { command, .. } => (s.name.clone(), command.clone()),
            codecoder_mcp::Transport::Http { url, .. }
            | codecoder_mcp::Transport::Sse { url, .. } => (s.name.clone(), url.clone()),
            codecoder_mcp::Transport::InProcess(_) => (s.name.clone(), "in-process".to_owned()),
        })
        .collect();
    assert_eq!(
        commands,
        [
            ("mine".to_owned(), "user-server".to_owned()),
            ("both".to_owned(), "from-config".to_owned())
        ]
    );
}

#[test]
fn an_enabled_plugins_mcp_json_adds_servers_with_its_root_expanded() {
    let (loaded, cwd, dirs) = mcp_setup("", "", false);
    let plugin = tempfile::tempdir().unwrap();
    fs_err::create_dir(plugin.path().join(".claude-plugin")).unwrap();
    fs_err::write(
        plugin.path().join(".claude-plugin/plugin.json"),
        r#"{"name": "tools", "mcpServers": "./more.json"}"#,
    )
    .unwrap();
    fs_err::write(
        plugin.path().join("more.json"),
        r#"{"mcpServers": {"extra": {"command": "extra-server"}}}"#,
    )
    .unwrap();
    fs_err::write(
        plugin.path().join(".mcp.json"),
        r#"{"mcpServers": {"db": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/db", "args": ["--root=${CLAUDE_PLUGIN_ROOT}"]}}}"#,
    )
    .unwrap();
    let home = dirs[0].path().to_owned();
    let added = crate::plugins::add_plugin(&home, plugin.path()).unwrap();
    let root = added.dir.to_string_lossy().into_owned();
    let home_os = home.as_os_str().to_owned();
    let lookup = |name: &str| (name == "CODECODER_HOME").then(|| home_os.clone());
    let (servers, notices) = crate::mcp::server_configs(&loaded, &cwd, &lookup);
    assert!(notices.is_empty(), "{notices:?}");
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["db", "extra"]);
    let codecoder_mcp::Transport::Stdio { command, args, .. } = &servers[0].transport else {
        panic!("{:?}", servers[0].transport)
    };
    assert_eq!(command, &format!("{root}/bin/db"));
    assert_eq!(args, &[format!("--root={root}")]);

    crate::plugins::set_plugin_enabled(&home, "tools", false).unwrap();
    let (servers, _) = crate::mcp::server_configs(&loaded, &cwd, &lookup);
    assert!(servers.is_empty(), "a disabled plugin's servers do not start");
}

#[test]
fn a_plugin_manifest_needs_a_kebab_case_name_and_the_list_survives_a_round_trip() {
    let home = tempfile::tempdir().unwrap();
    let plugin = tempfile::tempdir().unwrap();
    fs_err::create_dir(plugin.path().join(".claude-plugin")).unwrap();
    let manifest = plugin.path().join(".claude-plugin/plugin.json");
    fs_err::write(&manifest, r#"{"name": "Bad Name"}"#).unwrap();
    let err = crate::plugins::add_plugin(home.path(), plugin.path()).unwrap_err();
    assert!(err.to_string().contains("lowercase"), "{err}");
    assert!(crate::plugins::list_plugins(home.path()).unwrap().is_empty());

    fs_err::write(&manifest, r#"{"name": "good-1", "version": "2.0"}"#).unwrap();
    crate::plugins::add_plugin(home.path(), plugin.path()).unwrap();
    // Adding again replaces the entry rather than listing it twice.
    crate::plugins::add_plugin(home.path(), plugin.path()).unwrap();
    let listed = crate::plugins::list_plugins(home.path()).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].version.as_deref(), Some("2.0"));
    assert!(listed[0].enabled);
    assert!(!crate::plugins::set_plugin_enabled(home.path(), "missing", false).unwrap());
}

/// An index file's header listing `entries` files (git reads no further to count them).
fn index_header(entries: u32) -> Vec<u8> {
    let mut header = b"DIRC".to_vec();
    header.extend(2_u32.to_be_bytes());
    header.extend(entries.to_be_bytes());
    header
}

#[test]
fn the_prompts_git_status_is_not_taken_above_the_tracked_file_limit() {
    use codecoder_context::{GIT_STATUS_MAX_TRACKED_FILES, GitStatus};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Not a repository git could read: had git run, it would have failed (`None`).
    fs_err::create_dir_all(root.join(".git")).unwrap();
    fs_err::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    fs_err::write(root.join(".git/index"), index_header(GIT_STATUS_MAX_TRACKED_FILES + 1)).unwrap();
    let nested = root.join("packages/a");
    fs_err::create_dir_all(&nested).unwrap();
    let status = crate::host::git_status(&nested, codecoder_sandbox::Environment::Inherited);
    assert_eq!(
        status,
        Some(GitStatus::TooManyFiles {
            tracked_files: GIT_STATUS_MAX_TRACKED_FILES + 1,
            limit: GIT_STATUS_MAX_TRACKED_FILES
        })
    );
}

#[test]
fn the_prompts_git_status_is_taken_at_or_below_the_limit() {
    use codecoder_context::GitStatus;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let git = |args: &[&str]| {
        #[allow(clippy::disallowed_methods)] // The test makes its repository with git itself.
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(status.status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    fs_err::write(root.join("a.txt"), "a\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-qm", "a"]);
    fs_err::write(root.join("a.txt"), "changed\n").unwrap();
    fs_err::write(root.join("notes.txt"), "todo\n").unwrap();
    let status = crate::host::git_status(root, codecoder_sandbox::Environment::Inherited);
    assert_eq!(status, Some(GitStatus::Porcelain(" M a.txt\n?? notes.txt\n".to_owned())));
    assert!(!root.join(".git/index.lock").exists());
    assert_eq!(
        crate::host::git_status(&root.join(".."), codecoder_sandbox::Environment::Inherited),
        None,
        "outside a repository"
    );
}

#[test]
fn a_models_window_comes_from_config_then_the_server_then_the_catalog() {
    use crate::session::context_limits_with;
    let mut config = codecoder_config::ConfigToml::default();
    // Unknown model: the server's report over the unknown-model default.
    assert_eq!(context_limits_with(&config, "smol", None).window, 32_768);
    assert_eq!(context_limits_with(&config, "smol", Some(8192)).window, 8192);
    // A catalog model served locally: the server knows what it allocated.
    assert_eq!(context_limits_with(&config, "gpt-4o", None).window, 128_000);
    assert_eq!(context_limits_with(&config, "gpt-4o", Some(16_384)).window, 16_384);
    // The configured windows over both.
    config.model_context_window = Some(6000);
    assert_eq!(context_limits_with(&config, "smol", Some(8192)).window, 6000);
    config.models.insert(
        "smol".into(),
        codecoder_config::ModelToml { context_window: Some(2048), ..Default::default() },
    );
    let limits = context_limits_with(&config, "smol", Some(8192));
    assert_eq!(limits.window, 2048, "the model's own entry over model_context_window");
    // The reserve and the compaction limit follow the window that won.
    assert!(limits.max_output <= 1024, "{limits:?}");
    assert!(limits.auto_compact < 2048 - limits.max_output + 1, "{limits:?}");
    let served = context_limits_with(&codecoder_config::ConfigToml::default(), "smol", Some(8192));
    assert_eq!(served.max_output, 4096);
    assert!(served.auto_compact <= 4096, "{served:?}");
}

#[test]
fn cost_is_per_million_tokens_and_unknown_without_prices() {
    let pricing = crate::Pricing { input: Some(3.0), cached_input: Some(0.3), output: Some(15.0) };
    let usage = codecoder_protocol::Usage {
        input_tokens: 1_000_000,
        cached_input_tokens: 500_000,
        output_tokens: 100_000,
        reasoning_output_tokens: 0,
    };
    let cost = pricing.cost(&usage).unwrap();
    assert!((cost - (1.5 + 0.15 + 1.5)).abs() < 1e-9, "{cost}");
    assert_eq!(crate::Pricing::default().cost(&usage), None);
}

#[test]
fn a_bad_network_rule_names_the_file_that_listed_it() {
    use crate::{HostEntry, NetworkMode, NetworkSettings};
    let entry = |pattern: &str, source: &str| HostEntry {
        pattern: pattern.to_owned(),
        source: std::path::PathBuf::from(source),
    };
    let mut settings = NetworkSettings {
        mode: NetworkMode::Managed,
        allowed: vec![entry("pypi.org", "config.toml [network]")],
        denied: vec![entry("https://", "/project/.claude/settings.json")],
        presets: vec!["python".to_owned()],
    };
    let err = settings.policy().unwrap_err().to_string();
    assert!(err.contains("invalid network rule"), "{err}");
    assert!(err.contains("/project/.claude/settings.json"), "{err}");
    settings.denied.clear();
    let policy = settings.policy().unwrap();
    assert!(policy.allowed().iter().any(|rule| rule.preset() == Some("python")));
    settings.presets = vec!["cobol".to_owned()];
    let err = settings.policy().unwrap_err().to_string();
    assert!(err.contains("unknown network preset \"cobol\""), "{err}");
    assert!(err.contains("allow_presets"), "{err}");
}

#[test]
fn agent_model_aliases_map_through_the_provider_defaults_and_the_configured_table() {
    use crate::skills::{model_aliases, resolve_model};
    let anthropic = model_aliases("anthropic", None);
    assert_eq!(resolve_model("haiku", &anthropic), (Some("claude-haiku-4-5".to_owned()), false));
    assert_eq!(resolve_model("inherit", &anthropic), (None, false));
    assert_eq!(resolve_model("gpt-5", &anthropic), (Some("gpt-5".to_owned()), false));
    let configured: std::collections::BTreeMap<String, String> =
        [("sonnet", "mine"), ("opus", "inherit"), ("fast", "tiny")]
            .into_iter()
            .map(|(alias, model)| (alias.to_owned(), model.to_owned()))
            .collect();
    let openai = model_aliases("openai", Some(&configured));
    assert_eq!(resolve_model("sonnet", &openai), (Some("mine".to_owned()), false));
    assert_eq!(resolve_model("opus", &openai), (None, false));
    assert_eq!(resolve_model("fast", &openai), (Some("tiny".to_owned()), false));
    assert_eq!(resolve_model("haiku", &openai), (None, true), "unmapped: the parent's, flagged");
    assert_eq!(
        resolve_model("sonnet", &model_aliases("anthropic", Some(&configured))).0.as_deref(),
        Some("mine"),
        "the configured table wins over the provider's defaults"
    );
}

#[test]
fn agent_permission_modes_are_claude_codes_names() {
    use crate::skills::AgentMode;
    use codecoder_policy::PermissionMode;
    assert_eq!(AgentMode::parse("plan"), Some(AgentMode::Chain(PermissionMode::Plan)));
    assert_eq!(
        AgentMode::parse("acceptEdits"),
        Some(AgentMode::Chain(PermissionMode::AcceptEdits))
    );
    assert_eq!(AgentMode::parse("bypassPermissions"), Some(AgentMode::Bypass));
    assert_eq!(AgentMode::parse("dontAsk"), Some(AgentMode::DontAsk));
    assert_eq!(AgentMode::parse("yolo"), None);
}
