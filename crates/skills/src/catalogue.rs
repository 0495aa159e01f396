//! The catalogue section of the system prompt: each model-invocable skill's name and listing,
//! within a byte budget. Over the budget, the skills are ranked by BM25 of their name,
//! description and `when_to_use` against a query (the conversation so far), the best kept,
//! and the section says how many were left out.
//!
//! Invariant: a skill's body never appears here; the same skills and query give the same text.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::skill::Skill;

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;

/// The catalogue's text and what it left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalogue {
    /// The skills listed, in listing order (by name).
    pub listed: Vec<String>,
    /// Skills that did not fit.
    pub left_out: usize,
    /// The section's text; empty when no skill is offered to the model.
    pub text: String,
}

const PREAMBLE: &str = "# Skills\n\nSkills are folders of instructions, scripts and resources for \
particular tasks. When a task matches a skill below, call the `skill` tool with its name first: \
it returns the skill's instructions and its folder, whose files you can read or run as the \
instructions say.\n\n";

fn entry(skill: &Skill) -> String {
    format!("- `{}`: {}\n", skill.name, skill.listing())
}

impl Catalogue {
    /// The catalogue of `skills` (those with `disable-model-invocation` are left out
    /// entirely) within `budget` bytes, ranked against `query` when they do not all fit.
    pub fn select(skills: &[&Skill], query: &str, budget: usize) -> Self {
        let offered: Vec<&Skill> =
            skills.iter().copied().filter(|skill| !skill.disable_model_invocation).collect();
        if offered.is_empty() {
            return Self { listed: Vec::new(), left_out: 0, text: String::new() };
        }
        let entries: Vec<String> = offered.iter().map(|skill| entry(skill)).collect();
        let total: usize = PREAMBLE.len() + entries.iter().map(String::len).sum::<usize>();
        let mut chosen: Vec<usize> = if total <= budget {
            (0..offered.len()).collect()
        } else {
            let documents: Vec<String> = offered
                .iter()
                .map(|skill| {
                    format!(
                        "{} {} {}",
                        skill.name,
                        skill.description,
                        skill.when_to_use.as_deref().unwrap_or_default()
                    )
                })
                .collect();
            let order = bm25_rank(&documents, query);
            // Room for the "left out" line.
            let mut used = PREAMBLE.len() + 120;
            let mut chosen = Vec::new();
            for index in order {
                if used + entries[index].len() <= budget {
                    used += entries[index].len();
                    chosen.push(index);
                }
            }
            chosen
        };
        chosen.sort_by(|a, b| offered[*a].name.cmp(&offered[*b].name));
        let left_out = offered.len() - chosen.len();
        let mut text = PREAMBLE.to_owned();
        for &index in &chosen {
            text.push_str(&entries[index]);
        }
        if left_out > 0 {
            let _ = writeln!(
                text,
                "\n({left_out} more skills are installed but not listed here for lack of room; the `skill` tool activates any skill by its exact name.)"
            );
        }
        Self {
            listed: chosen.iter().map(|&index| offered[index].name.clone()).collect(),
            left_out,
            text: text.trim_end().to_owned(),
        }
    }
}

/// Lowercase alphanumeric words (hyphens split).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|word| word.len() > 1).map(str::to_lowercase)
}

/// The indexes of `documents`, best BM25 score against `query` first; ties (and an empty
/// query) keep document order.
pub fn bm25_rank(documents: &[String], query: &str) -> Vec<usize> {
    let docs: Vec<HashMap<String, u32>> = documents
        .iter()
        .map(|doc| {
            let mut counts = HashMap::new();
            for word in words(doc) {
                *counts.entry(word).or_insert(0) += 1;
            }
            counts
        })
        .collect();
    let lengths: Vec<f64> =
        docs.iter().map(|counts| f64::from(counts.values().sum::<u32>())).collect();
    let n = docs.len() as f64;
    let average = if docs.is_empty() { 1.0 } else { lengths.iter().sum::<f64>() / n }.max(1.0);
    let mut terms: Vec<String> = words(query).collect();
    terms.sort();
    terms.dedup();
    let mut scores = vec![0.0_f64; docs.len()];
    for term in &terms {
        let containing = docs.iter().filter(|counts| counts.contains_key(term)).count() as f64;
        if containing == 0.0 {
            continue;
        }
        let idf = ((n - containing + 0.5) / (containing + 0.5) + 1.0).ln();
        for (index, counts) in docs.iter().enumerate() {
            if let Some(&tf) = counts.get(term) {
                let tf = f64::from(tf);
                scores[index] +=
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * lengths[index] / average));
            }
        }
    }
    let mut order: Vec<usize> = (0..docs.len()).collect();
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
    order
}
