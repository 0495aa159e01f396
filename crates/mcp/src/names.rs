//! The names the model calls MCP tools by: `mcp__<server>__<tool>`.
//!
//! Invariants: every name matches `[A-Za-z0-9_-]{1,64}` (what the providers accept); distinct
//! (server, tool) pairs get distinct names; a name is changed only when it must be (characters
//! outside the set become `_`; a name over 64 characters is cut and gets a hash suffix of the
//! original pair, so it stays stable from run to run).

use std::collections::HashSet;

use sha2::{Digest, Sha256};

const MAX_LEN: usize = 64;
const HASH_LEN: usize = 8;

/// The model-visible names of `pairs` ((server, tool)), in order.
pub fn qualified_names(pairs: &[(&str, &str)]) -> Vec<String> {
    let mut taken = HashSet::new();
    let mut names = Vec::with_capacity(pairs.len());
    for (server, tool) in pairs {
        let raw = format!("mcp__{server}__{tool}");
        let clean: String = raw
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .collect();
        let mut name = if clean.len() > MAX_LEN || (clean != raw && taken.contains(&clean)) {
            hashed(&clean, &raw)
        } else {
            clean
        };
        let mut round = 0u32;
        while taken.contains(&name) {
            round += 1;
            name = hashed(&name, &format!("{raw}#{round}"));
        }
        taken.insert(name.clone());
        names.push(name);
    }
    names
}

fn hashed(clean: &str, raw: &str) -> String {
    let digest = Sha256::digest(raw.as_bytes());
    let hex: String = digest.iter().take(HASH_LEN / 2).map(|b| format!("{b:02x}")).collect();
    let keep = MAX_LEN - HASH_LEN - 1;
    let prefix: String = clean.chars().take(keep).collect();
    format!("{prefix}_{hex}")
}
