//! The section size policy: over 10,000 tokens refused, over 1,000 warned; the AGENTS.md budget
//! applies before the policy.

use codecoder_context::{BASE_INSTRUCTIONS, Error, Warning, count_tokens};
use pretty_assertions::assert_eq;

use crate::support::Project;

/// About `tokens` tokens of prose-like text, in lines.
fn words(tokens: usize) -> String {
    (0..tokens / 10).map(|_| "the quick brown fox jumps over the lazy dog again\n").collect()
}

#[test]
fn standard_sections_are_small() {
    let project = Project::new();
    let builder = project.builder(&project.repo(), &project.config());
    let names: Vec<&str> = builder.sections().iter().map(|section| section.name.as_str()).collect();
    assert_eq!(names, ["base instructions", "environment"]);
    assert!(builder.warnings().is_empty(), "{:?}", builder.warnings());
    let base = count_tokens(BASE_INSTRUCTIONS);
    assert!((300..1_000).contains(&base), "base instructions have {base} tokens");
}

#[test]
fn a_section_over_ten_thousand_tokens_is_refused() {
    let project = Project::new();
    let mut config = project.config();
    config.base_instructions = words(12_000);
    let err = project.try_builder(&project.repo(), &config).unwrap_err();
    assert!(
        matches!(&err, Error::SectionTooLarge { section, tokens, limit: 10_000 }
            if section == "base instructions" && *tokens > 10_000),
        "{err:?}"
    );
}

#[test]
fn a_section_over_one_thousand_tokens_is_warned() {
    let project = Project::new();
    project.write("repo/AGENTS.md", &words(1_500));
    let builder = project.builder(&project.repo(), &project.config());
    let section = builder.sections().iter().find(|section| section.name == "AGENTS.md").unwrap();
    assert!((1_000..10_000).contains(&section.tokens()), "{}", section.tokens());
    assert_eq!(
        builder.warnings(),
        [Warning::LargeSection {
            section: "AGENTS.md".to_owned(),
            tokens: section.tokens(),
            threshold: 1_000
        }]
    );
}

#[test]
fn agents_md_budget_applies_before_the_policy() {
    let project = Project::new();
    // About 14,000 tokens: over the refusal limit whole, under it once cut to 32 KiB.
    project.write("repo/AGENTS.md", &words(14_000));

    let builder = project.builder(&project.repo(), &project.config());
    let section = builder.sections().iter().find(|section| section.name == "AGENTS.md").unwrap();
    assert!(section.text.contains("[AGENTS.md truncated:"));
    assert!(section.tokens() < 10_000, "{}", section.tokens());
    assert!(matches!(
        builder.warnings(),
        [Warning::AgentsMdTruncated { .. }, Warning::LargeSection { .. }]
    ));

    // With a budget large enough to keep it whole, the section is refused.
    let mut config = project.config();
    config.agents_md.budget_bytes = 1024 * 1024;
    let err = project.try_builder(&project.repo(), &config).unwrap_err();
    assert!(
        matches!(&err, Error::SectionTooLarge { section, .. } if section == "AGENTS.md"),
        "{err:?}"
    );
}

#[test]
fn agent_instructions_are_checked_on_request() {
    let project = Project::new();
    let builder = project.builder(&project.repo(), &project.config());
    assert_eq!(builder.check_section("agent instructions", "Review only.").unwrap(), None);
    assert!(matches!(
        builder.check_section("agent instructions", &words(2_000)).unwrap(),
        Some(Warning::LargeSection { .. })
    ));
    assert!(matches!(
        builder.check_section("agent instructions", &words(11_000)),
        Err(Error::SectionTooLarge { .. })
    ));
}

#[test]
fn an_output_reserve_filling_the_window_is_refused() {
    let project = Project::new();
    let mut config = project.config();
    config.max_output_tokens = config.context_window;
    let err = project.try_builder(&project.repo(), &config).unwrap_err();
    assert!(
        matches!(err, Error::InvalidWindow { context_window: 128_000, max_output_tokens: 128_000 }),
        "{err:?}"
    );
}
