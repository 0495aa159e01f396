//! Tests of the config crate: layering and origins, trust, errors with file and line, `-c`,
//! profiles, credentials, and the checked-in schema.
#![allow(clippy::disallowed_methods)] // Tests set up fixtures with std::fs.

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

use crate::{Error, LoadOptions, Origin, ReasoningEffort, load, parse_override};

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    system: PathBuf,
    home: PathBuf,
    project: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let home = root.join("home");
    let project = root.join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    Fixture { system: root.join("etc-config.toml"), root, home, project, _dir: dir }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

impl Fixture {
    fn options(&self, profile: Option<&str>, overrides: &[&str]) -> LoadOptions {
        LoadOptions {
            system_path: self.system.clone(),
            home: Some(self.home.clone()),
            cwd: self.project.join("src"),
            profile: profile.map(str::to_owned),
            overrides: overrides.iter().map(|s| (*s).to_owned()).collect(),
        }
    }
}

#[test]
fn layers_merge_in_order_and_remember_origins() {
    let f = fixture();
    write(
        &f.system,
        "model = \"sys-model\"\nmodel_provider = \"openai\"\n[agent]\nmax_steps_per_turn = 10\n",
    );
    write(
        &f.home.join("config.toml"),
        "model = \"user-model\"\n[agent]\nmax_parallel_tools = 4\n[profiles.fast]\nmodel = \"fast-model\"\nmodel_reasoning_effort = \"low\"\nmodel_context_window = 8192\nmodel_auto_compact_token_limit = 6000\n",
    );
    let project_config = f.project.join(".codecoder/config.toml");
    write(&project_config, "model_provider = \"anthropic\"\n");

    // Untrusted: the project layer is ignored, with a notice.
    let loaded = load(&f.options(None, &[])).unwrap();
    assert_eq!(loaded.config.model.as_deref(), Some("user-model"));
    assert_eq!(loaded.config.model_provider.as_deref(), Some("openai"));
    assert_eq!(loaded.notices.len(), 1, "{:?}", loaded.notices);
    assert!(loaded.notices[0].contains("not trusted"));

    crate::trust(&f.home, &f.project).unwrap();
    let loaded = load(
        &f.options(Some("fast"), &["agent.max_steps_per_turn=7", "model_max_output_tokens=2000"]),
    )
    .unwrap();
    let config = &loaded.config;
    assert_eq!(config.model.as_deref(), Some("fast-model"));
    assert_eq!(config.model_provider.as_deref(), Some("anthropic"));
    assert_eq!(config.model_reasoning_effort, Some(ReasoningEffort::Low));
    assert_eq!(config.model_max_output_tokens, Some(2000));
    // A profile sets the window of a local server's model, as the top level does.
    assert_eq!(config.model_context_window, Some(8192));
    assert_eq!(config.model_auto_compact_token_limit, Some(6000));
    assert_eq!(loaded.origins["model_context_window"], Origin::Profile("fast".into()));
    let agent = config.agent.clone().unwrap();
    assert_eq!((agent.max_steps_per_turn, agent.max_parallel_tools), (Some(7), Some(4)));
    assert!(loaded.notices.is_empty());
    assert_eq!(loaded.origins["model"], Origin::Profile("fast".into()));
    assert_eq!(loaded.origins["model_provider"], Origin::Project(project_config));
    assert_eq!(
        loaded.origins["agent.max_parallel_tools"],
        Origin::User(f.home.join("config.toml"))
    );
    assert_eq!(
        loaded.origins["agent.max_steps_per_turn"],
        Origin::Override("agent.max_steps_per_turn=7".into())
    );
    let _ = &f.root;
}

#[test]
fn an_unknown_key_names_file_line_and_the_closest_key() {
    let f = fixture();
    let path = f.home.join("config.toml");
    write(&path, "model = \"m\"\n\n[agent]\nmax_step_per_turn = 3\n");
    let err = load(&f.options(None, &[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:4: unknown key `max_step_per_turn` (did you mean `max_steps_per_turn`?)",
            path.display()
        )
    );
    write(&path, "modle = \"m\"\n");
    let err = load(&f.options(None, &[])).unwrap_err();
    assert!(err.to_string().ends_with(":1: unknown key `modle` (did you mean `model`?)"), "{err}");
}

#[test]
fn a_bad_value_or_bad_toml_names_file_line_and_column() {
    let f = fixture();
    let path = f.home.join("config.toml");
    write(&path, "model = \"m\"\n[agent]\nmax_steps_per_turn = \"many\"\n");
    let err = load(&f.options(None, &[])).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with(&format!("{}:3:", path.display())), "{text}");
    assert!(matches!(err, Error::Invalid { line: 3, .. }), "{err:?}");
    write(&path, "model = \n");
    let err = load(&f.options(None, &[])).unwrap_err();
    assert!(matches!(err, Error::Invalid { line: 1, .. }), "{err:?}");
}

#[test]
fn overrides_parse_values_and_reject_unknown_keys() {
    let table = parse_override("model_providers.local.base_url=http://127.0.0.1:9/v1").unwrap();
    assert_eq!(
        table["model_providers"]["local"]["base_url"].as_str(),
        Some("http://127.0.0.1:9/v1")
    );
    let table = parse_override("agent.max_parallel_tools = 3").unwrap();
    assert_eq!(table["agent"]["max_parallel_tools"].as_integer(), Some(3));
    let table = parse_override("project_doc_fallback_filenames=[\"CLAUDE.md\"]").unwrap();
    assert_eq!(table["project_doc_fallback_filenames"][0].as_str(), Some("CLAUDE.md"));
    let err = parse_override("modle=x").unwrap_err();
    assert_eq!(err.to_string(), "-c modle=x: unknown key `modle` (did you mean `model`?)");
    let err = parse_override("no-equals-sign").unwrap_err();
    assert_eq!(err.to_string(), "-c no-equals-sign: expected key=value");
    assert!(parse_override("agent.max_parallel_tools=lots").is_err());
}

#[test]
fn an_unknown_profile_lists_the_defined_ones() {
    let f = fixture();
    write(
        &f.home.join("config.toml"),
        "[profiles.a]\nmodel = \"x\"\n[profiles.b]\nmodel = \"y\"\n",
    );
    let err = load(&f.options(Some("c"), &[])).unwrap_err();
    assert_eq!(err.to_string(), "no profile named `c` (defined: a, b)");
    let loaded = load(&f.options(None, &["profile=b"])).unwrap();
    assert_eq!(loaded.config.model.as_deref(), Some("y"));
}

#[test]
fn the_shell_environment_policy_layers_from_files_profiles_and_overrides() {
    use codecoder_protocol::Inherit;
    let f = fixture();
    write(
        &f.home.join("config.toml"),
        "[shell_environment_policy]\nexclude = [\"AWS_*\"]\nset = { A = \"1\" }\n\
         [profiles.strict.shell_environment_policy]\ninherit = \"none\"\n",
    );
    let loaded = load(&f.options(None, &[])).unwrap();
    let policy = loaded.config.shell_environment_policy.unwrap();
    assert_eq!((policy.inherit, policy.exclude), (None, vec!["AWS_*".to_owned()]));
    let loaded = load(&f.options(
        Some("strict"),
        &[
            "shell_environment_policy.set.B=two",
            "shell_environment_policy.ignore_default_excludes=true",
        ],
    ))
    .unwrap();
    let policy = loaded.config.shell_environment_policy.unwrap();
    assert_eq!(policy.inherit, Some(Inherit::None));
    assert_eq!(policy.ignore_default_excludes, Some(true));
    assert_eq!(policy.exclude, ["AWS_*"]);
    let set: Vec<(&str, &str)> = policy.set.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(set, [("A", "1"), ("B", "two")]);
    assert_eq!(
        loaded.origins["shell_environment_policy.inherit"],
        Origin::Profile("strict".into())
    );
    let table = parse_override("shell_environment_policy.inherit=core").unwrap();
    assert_eq!(table["shell_environment_policy"]["inherit"].as_str(), Some("core"));
    let err = parse_override("shell_environment_policy.inherit=some").unwrap_err();
    assert!(err.to_string().contains("unknown variant `some`"), "{err}");
    let err = parse_override("shell_environment_policy.exclud=[]").unwrap_err();
    assert!(err.to_string().contains("did you mean `exclude`"), "{err}");
}

#[test]
fn credentials_are_stored_owner_only() {
    let f = fixture();
    crate::store_credential(&f.home, "openai", "sk-test-123").unwrap();
    crate::store_credential(&f.home, "anthropic", "sk-ant-456").unwrap();
    assert_eq!(crate::load_credential(&f.home, "openai").as_deref(), Some("sk-test-123"));
    assert_eq!(crate::load_credential(&f.home, "anthropic").as_deref(), Some("sk-ant-456"));
    assert_eq!(crate::load_credential(&f.home, "deepseek"), None);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode =
            std::fs::metadata(f.home.join(crate::CREDENTIALS_FILE)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn concurrent_edits_of_a_home_file_keep_every_change() {
    // Eight writers at once (threads here; the lock is the same between processes): each
    // trusts its own project and stores its own key, and none is lost.
    let f = fixture();
    let projects: Vec<PathBuf> = (0..8)
        .map(|n| {
            let dir = f.home.join(format!("project-{n}"));
            std::fs::create_dir_all(&dir).unwrap();
            dir
        })
        .collect();
    std::thread::scope(|scope| {
        for (n, project) in projects.iter().enumerate() {
            let home = &f.home;
            scope.spawn(move || {
                crate::trust(home, project).unwrap();
                crate::store_credential(home, &format!("provider-{n}"), &format!("key-{n}"))
                    .unwrap();
            });
        }
    });
    for (n, project) in projects.iter().enumerate() {
        assert!(crate::is_trusted(&f.home, project), "project {n}");
        let key = crate::load_credential(&f.home, &format!("provider-{n}"));
        assert_eq!(key.as_deref(), Some(format!("key-{n}").as_str()));
    }
    // No temporary file is left behind.
    let left: Vec<String> = std::fs::read_dir(&f.home)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn a_malformed_home_file_is_an_error_naming_it_and_is_left_as_it_was() {
    let f = fixture();
    let broken = "[providers.openai]\napi_key = \"sk-kept\"\n[providers\n";
    let credentials = f.home.join(crate::CREDENTIALS_FILE);
    std::fs::write(&credentials, broken).unwrap();
    let err = crate::store_credential(&f.home, "anthropic", "sk-new").unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:3:", credentials.display())), "{err}");
    assert_eq!(std::fs::read_to_string(&credentials).unwrap(), broken);

    let trusted = f.home.join("trusted-projects.toml");
    std::fs::write(&trusted, "[projects.\"/a\"]\ntrusted = yes\n").unwrap();
    let err = crate::trust(&f.home, &f.home).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:2:", trusted.display())), "{err}");
    assert_eq!(std::fs::read_to_string(&trusted).unwrap(), "[projects.\"/a\"]\ntrusted = yes\n");
}

/// `UPDATE_EXPECT=1 cargo test -p codecoder-config` rewrites the checked-in schema.
#[test]
fn config_schema_is_up_to_date() {
    let actual = crate::json_schema();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/config.schema.json");
    if std::env::var_os(codecoder_protocol::env::UPDATE_EXPECT).is_some() {
        write(&path, &actual);
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{} is stale: run `UPDATE_EXPECT=1 cargo test -p codecoder-config`",
        path.display()
    );
}

#[test]
fn permission_rules_and_hooks_are_kept_per_layer() {
    let f = fixture();
    write(
        &f.home.join("config.toml"),
        "sandbox_mode = \"read-only\"\n[permissions]\nallow = [\"run_command(git status*)\"]\n\
         [[hooks.PreToolUse]]\nmatcher = \"Bash\"\nhooks = [{ type = \"command\", command = \"./check.sh\", timeout = 5 }]\n",
    );
    write(
        &f.project.join(".codecoder/config.toml"),
        "approval_policy = \"never\"\n[permissions]\ndeny = [\"run_command(git push*)\"]\n",
    );
    crate::trust(&f.home, &f.project).unwrap();
    let loaded = load(&f.options(None, &["permissions.ask=[\"edit(src/**)\"]"])).unwrap();
    assert!(loaded.project_trusted);
    type Lists = (String, Vec<String>, Vec<String>, Vec<String>);
    let summary: Vec<Lists> = loaded
        .layers
        .iter()
        .map(|(origin, layer)| {
            let rules = layer.permissions.clone().unwrap_or_default();
            let kind = match origin {
                Origin::User(_) => "user",
                Origin::Project(_) => "project",
                Origin::Override(_) => "override",
                _ => "other",
            };
            (kind.to_owned(), rules.allow, rules.ask, rules.deny)
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("user".to_owned(), vec!["run_command(git status*)".to_owned()], vec![], vec![]),
            ("project".to_owned(), vec![], vec![], vec!["run_command(git push*)".to_owned()]),
            ("override".to_owned(), vec![], vec!["edit(src/**)".to_owned()], vec![]),
        ]
    );
    assert_eq!(loaded.config.sandbox_mode, Some(codecoder_protocol::SandboxMode::ReadOnly));
    assert_eq!(loaded.config.approval_policy, Some(codecoder_protocol::ApprovalMode::Never));
    let hook = &loaded.config.hooks["PreToolUse"][0];
    assert_eq!(hook.matcher.as_deref(), Some("Bash"));
    assert_eq!(hook.hooks[0].command.as_deref(), Some("./check.sh"));
    assert_eq!(hook.hooks[0].timeout, Some(5.0));
}

#[test]
fn a_bad_sandbox_mode_names_the_file_and_line() {
    let f = fixture();
    write(&f.home.join("config.toml"), "model = \"m\"\nsandbox_mode = \"workspace\"\n");
    let err = load(&f.options(None, &[])).unwrap_err().to_string();
    assert!(err.contains("config.toml") && err.contains(":2"), "{err}");
    assert!(err.contains("workspace-write"), "{err}");
}

#[test]
fn tool_call_format_reads_from_file_and_override_and_refuses_unknown_forms() {
    let f = fixture();
    write(
        &f.home.join("config.toml"),
        "model = \"m\"\n[model_providers.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\ntool_call_format = \"hermes\"\n",
    );
    let loaded = load(&f.options(None, &[])).unwrap();
    let local = &loaded.config.model_providers["local"];
    assert_eq!(local.tool_call_format, Some(crate::ToolCallFormat::Hermes));
    let loaded =
        load(&f.options(None, &["model_providers.local.tool_call_format=\"auto\""])).unwrap();
    let local = &loaded.config.model_providers["local"];
    assert_eq!(local.tool_call_format, Some(crate::ToolCallFormat::Auto));
    let table = parse_override("model_providers.local.tool_call_format=llama3").unwrap();
    assert_eq!(table["model_providers"]["local"]["tool_call_format"].as_str(), Some("llama3"));

    write(
        &f.home.join("config.toml"),
        "model = \"m\"\n[model_providers.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\ntool_call_format = \"xml\"\n",
    );
    let err = load(&f.options(None, &[])).unwrap_err().to_string();
    assert!(err.contains("config.toml") && err.contains(":4"), "{err}");
    assert!(err.contains("unknown variant `xml`") && err.contains("hermes"), "{err}");
}

#[test]
fn language_servers_and_formatters_parse_and_their_errors_name_file_and_line() {
    let f = fixture();
    let path = f.home.join("config.toml");
    write(
        &path,
        "[lsp]\nenabled = true\ndiagnostics_wait_ms = 500\n[lsp.pyright]\ncommand = \"/opt/pyright-langserver\"\nargs = [\"--stdio\"]\nextensions = [\"py\"]\ninitialization_options = { a = 1 }\n[formatters.ruff]\ncommand = [\"ruff\", \"format\", \"$FILE\"]\nextensions = [\"py\"]\n",
    );
    let loaded = load(&f.options(None, &[])).unwrap();
    let lsp = loaded.config.lsp.unwrap();
    assert_eq!(lsp.enabled, Some(true));
    assert_eq!(lsp.diagnostics_wait_ms, Some(500));
    let pyright = &lsp.servers["pyright"];
    assert_eq!(pyright.command.as_deref(), Some("/opt/pyright-langserver"));
    assert_eq!(pyright.initialization_options, Some(serde_json::json!({ "a": 1 })));
    assert_eq!(loaded.config.formatters["ruff"].command, ["ruff", "format", "$FILE"]);

    write(&path, "model = \"m\"\n[lsp.pyright]\ncomand = \"x\"\n");
    let err = load(&f.options(None, &[])).unwrap_err();
    assert!(err.to_string().starts_with(&format!("{}:", path.display())), "{err}");
    assert!(err.to_string().contains("comand"), "{err}");
    write(&path, "model = \"m\"\n[formatters.ruff]\ncommand = \"ruff\"\nextensions = [\"py\"]\n");
    let err = load(&f.options(None, &[])).unwrap_err();
    assert!(err.to_string().starts_with(&format!("{}:3:", path.display())), "{err}");
}
