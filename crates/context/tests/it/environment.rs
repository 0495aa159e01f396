//! The environment section: cwd, OS, shell, date from the injected clock, git branch from
//! `.git/HEAD`, the caller's git status; and where it sits among the sections.

use std::sync::Arc;

use std::time::Duration;

use codecoder_context::{
    AgentsMdLoader, BASE_INSTRUCTIONS, ContextBuilder, Environment, GitStatus, render_environment,
};
use codecoder_kernel::{PromptBuilder, PromptInput};
use codecoder_protocol::{Message, SessionId, StepId, TurnId};
use codecoder_stdx::ManualClock;
use pretty_assertions::assert_eq;

use crate::support::{Project, START_MS, tools};

#[test]
fn environment_section_shows_cwd_os_shell_date_branch_status() {
    let project = Project::new();
    project.write("repo/.git/HEAD", "ref: refs/heads/fix/parser\n");
    let cwd = project.mkdir("repo/src");
    let environment = Environment {
        cwd: cwd.clone(),
        os: "linux (x86_64)".to_owned(),
        shell: Some("/usr/bin/fish".to_owned()),
        git_status: Some(GitStatus::Porcelain(" M src/lib.rs\n?? notes.txt\n".to_owned())),
    };
    // The clock is read once, when the builder is made.
    let clock = ManualClock::new(START_MS, 0);
    let builder =
        ContextBuilder::new(&project.config(), &environment, &clock, &AgentsMdLoader::new())
            .unwrap();

    let section = &builder.sections()[1];
    assert_eq!(section.name, "environment");
    assert_eq!(
        section.text,
        format!(
            "# Environment\n\n\
             - Working directory: {}\n\
             - Operating system: linux (x86_64)\n\
             - Shell: /usr/bin/fish\n\
             - Date at session start: 2026-11-30 (UTC)\n\
             - Git repository: {}\n\
             - Git branch: fix/parser\n\
             - Git status at session start: 1 modified, 1 untracked\n     M src/lib.rs\n    ?? notes.txt",
            cwd.display(),
            project.repo().display()
        )
    );
}

#[test]
fn a_status_not_taken_says_why_and_what_to_do_instead() {
    let project = Project::new();
    project.write("repo/.git/HEAD", "ref: refs/heads/main\n");
    let clock = ManualClock::new(START_MS, 0);
    let mut environment = Environment::new(project.repo(), None);
    let status_line = |environment: &Environment| {
        let text = render_environment(environment, &clock);
        let line = text.lines().find(|line| line.starts_with("- Git status"));
        line.map(str::to_owned)
    };

    environment.git_status =
        Some(GitStatus::TooManyFiles { tracked_files: 200_000, limit: 20_000 });
    assert_eq!(
        status_line(&environment).as_deref(),
        Some(
            "- Git status at session start: not taken (the repository tracks 200000 files, \
             more than the 20000 a status is taken for); run `git status -- <path>` for the \
             part you work on"
        )
    );
    environment.git_status = Some(GitStatus::TimedOut { timeout: Duration::from_secs(1) });
    assert_eq!(
        status_line(&environment).as_deref(),
        Some(
            "- Git status at session start: not taken (git took longer than 1000 ms); run \
             `git status -- <path>` for the part you work on"
        )
    );
    environment.git_status = None;
    assert_eq!(status_line(&environment), None, "git missing or failed: nothing is said");
}

#[test]
fn outside_a_repository_says_so() {
    let project = Project::new();
    let cwd = project.mkdir("plain");
    let builder = project.builder(&cwd, &project.config());
    let text = &builder.sections()[1].text;
    assert!(text.ends_with("- Not a git repository"), "{text}");
    assert!(text.contains("- Shell: /bin/zsh"), "{text}");
    assert!(!text.contains("Git branch"), "{text}");
}

#[test]
fn instructions_are_the_sections_in_order_then_agent_instructions() {
    let project = Project::new();
    project.write("repo/AGENTS.md", "Run `make test`.");
    let builder = Arc::new(project.builder(&project.repo(), &project.config()));
    let names: Vec<&str> = builder.sections().iter().map(|section| section.name.as_str()).collect();
    assert_eq!(names, ["base instructions", "environment", "AGENTS.md"]);

    let history = [Message::user_text("hi")];
    let tools = tools();
    let input = PromptInput {
        session_id: SessionId::new(),
        model: "gpt-test",
        agent_instructions: Some("You review code; you never edit."),
        history: &crate::support::arcs(&history),
        tools: &tools,
        turn: TurnId::new(1),
        step: StepId::new(1),
    };
    let request = builder.build(&input);
    let sections: Vec<&str> =
        builder.sections().iter().map(|section| section.text.as_str()).collect();
    assert_eq!(
        request.instructions,
        format!(
            "{}\n\n# Agent instructions\n\nYou review code; you never edit.",
            sections.join("\n\n")
        )
    );
    assert!(request.instructions.starts_with(BASE_INSTRUCTIONS));
    assert!(request.instructions.contains("# AGENTS.md\n\nThe project's instruction files"));
    assert!(request.instructions.contains("Run `make test`."));
    assert_eq!(request.tools, tools);
    assert_eq!(request.history, crate::support::arcs(&history));
    assert_eq!(request.max_output_tokens, Some(8_000));
    assert_eq!(request.model, "gpt-test");

    // Another session without agent instructions gets the sections alone.
    let other = builder.build(&PromptInput {
        session_id: SessionId::new(),
        agent_instructions: None,
        ..input
    });
    assert_eq!(other.instructions, sections.join("\n\n"));
}
