//! `codecoder config show|schema`, `trust`, `login`.

use std::process::{Command, Stdio};

use crate::{stderr, stdout};

fn run(
    home: &std::path::Path,
    cwd: &std::path::Path,
    args: &[&str],
    stdin: &str,
) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("CODECODER_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn config_show_with_origins_profiles_and_overrides() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let user_config = home.path().join("config.toml");
    std::fs::write(
        &user_config,
        "model = \"user-model\"\n[profiles.fast]\nmodel = \"fast-model\"\n[model_providers.local.http_headers]\nAuthorization = \"Bearer secret-token\"\n",
    )
    .unwrap();
    let out = run(home.path(), project.path(), &["config", "show", "--origin"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("model = \"user-model\"  # {}", user_config.display())),
        "{text}"
    );
    assert!(!text.contains("secret-token"), "a header credential leaked:\n{text}");
    assert!(text.contains("Authorization = \"********\""), "{text}");

    let out = run(
        home.path(),
        project.path(),
        &["-p", "fast", "-c", "agent.max_steps_per_turn=9", "config", "show", "--origin"],
        "",
    );
    let text = stdout(&out);
    assert!(text.contains("model = \"fast-model\"  # profile fast"), "{text}");
    assert!(
        text.contains("agent.max_steps_per_turn = 9  # -c agent.max_steps_per_turn=9"),
        "{text}"
    );
}

#[test]
fn a_bad_config_names_file_and_line() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let user_config = home.path().join("config.toml");
    std::fs::write(&user_config, "model = \"m\"\nmodle_provider = \"x\"\n").unwrap();
    let out = run(home.path(), project.path(), &["config", "show"], "");
    assert_eq!(out.status.code(), Some(2), "config errors exit 2");
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}:2: unknown key `modle_provider` (did you mean `model_provider`?)",
            user_config.display()
        )),
        "{err}"
    );
    std::fs::remove_file(&user_config).unwrap();
    let out = run(home.path(), project.path(), &["-c", "agent.bogus=1", "config", "show"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("-c agent.bogus=1: unknown key `bogus`"), "{}", stderr(&out));
}

#[test]
fn trust_enables_the_project_config() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".git")).unwrap();
    std::fs::create_dir_all(project.path().join(".codecoder")).unwrap();
    std::fs::write(project.path().join(".codecoder/config.toml"), "model = \"project-model\"\n")
        .unwrap();
    let out = run(home.path(), project.path(), &["config", "show"], "");
    let text = stdout(&out);
    assert!(text.contains("not trusted") && !text.contains("project-model"), "{text}");
    let out = run(home.path(), project.path(), &["trust"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(home.path(), project.path(), &["config", "show"], "");
    assert!(stdout(&out).contains("model = \"project-model\""), "{}", stdout(&out));
}

#[test]
fn config_schema_and_login() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), home.path(), &["config", "schema"], "");
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["title"], "ConfigToml");
    assert!(schema["properties"]["model_providers"].is_object());
    let out = run(home.path(), home.path(), &["login", "--provider", "openai"], "sk-from-stdin\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("sk-from-stdin"));
    let stored = std::fs::read_to_string(home.path().join("credentials.toml")).unwrap();
    assert!(stored.contains("sk-from-stdin"));
    let out = run(home.path(), home.path(), &["login", "--provider", "openai"], "");
    assert_eq!(out.status.code(), Some(1));
}
