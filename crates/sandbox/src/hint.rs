//! `denial_hint`: does a failed command's output look like the sandbox stopped it? Used to offer
//! "retry without sandbox?".
//!
//! Invariants:
//! - A successful command never gets a hint.
//! - A "Permission denied"/"Operation not permitted" naming a path gets a hint only when the
//!   policy itself forbids that access (a hidden path, or a write outside the writable roots or
//!   into a protected subpath); an ordinary permission problem inside the roots gets none.
//! - Network messages get a hint only when the policy has the network off or proxied (then the
//!   hint says that only the proxy is reachable).

use std::path::{Path, PathBuf};

use crate::policy::{NetworkMode, SandboxPolicy};

const NETWORK_MESSAGES: [&str; 7] = [
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "nodename nor servname provided",
    "No address associated with hostname",
    "getaddrinfo",
];

/// A short reason when `output` (stdout and stderr of a failed command) looks like a sandbox
/// denial under `policy`, e.g. "writing /etc/foo was blocked by the sandbox (outside the writable
/// roots)". `None` when the command succeeded or nothing points at the sandbox.
pub fn denial_hint(exit_code: Option<i32>, output: &str, policy: &SandboxPolicy) -> Option<String> {
    if exit_code == Some(0) {
        return None;
    }
    for line in output.lines() {
        if let Some(hint) = line_hint(line, policy) {
            return Some(hint);
        }
    }
    None
}

fn line_hint(line: &str, policy: &SandboxPolicy) -> Option<String> {
    let network_off = !policy.network;
    if network_off && NETWORK_MESSAGES.iter().any(|message| line.contains(message)) {
        return Some(network_blocked(policy));
    }
    let read_only = line.contains("Read-only file system");
    let denied = line.contains("Permission denied") || line.contains("Operation not permitted");
    if !read_only && !denied {
        return None;
    }
    if let Some(path) = path_in(line) {
        if is_hidden(&path, policy) {
            return Some(format!(
                "reading {} was blocked by the sandbox (a hidden credential store)",
                path.display()
            ));
        }
        if let Some(protection) = policy.protection(&path) {
            return Some(format!(
                "writing {} was blocked by the sandbox (it is protected: {})",
                path.display(),
                protection.rule_text()
            ));
        }
        if !policy.allows_write(&path) {
            return Some(format!(
                "writing {} was blocked by the sandbox (outside the writable roots)",
                path.display()
            ));
        }
        return None;
    }
    let lower = line.to_ascii_lowercase();
    let socket_words = ["socket", "connect", "bind", "network"];
    if network_off && denied && socket_words.iter().any(|word| lower.contains(word)) {
        return Some(network_blocked(policy));
    }
    if read_only {
        return Some("a write was blocked by the sandbox (read-only file system)".to_owned());
    }
    None
}

fn network_blocked(policy: &SandboxPolicy) -> String {
    match policy.network_mode() {
        NetworkMode::Proxied(_) => "network access was blocked by the sandbox (only the managed \
             proxy is reachable: HTTP and HTTPS through HTTP_PROXY/HTTPS_PROXY, other TCP through \
             ALL_PROXY's SOCKS5)"
            .to_owned(),
        NetworkMode::Off | NetworkMode::Full => {
            "network access was blocked by the sandbox (the network is off)".to_owned()
        }
    }
}

/// The first absolute path in `line`, without the quotes and trailing colon tools put around it.
fn path_in(line: &str) -> Option<PathBuf> {
    line.split_whitespace().find_map(|word| {
        let word = word.trim_matches(|c: char| {
            matches!(
                c,
                '\'' | '"' | '`' | '‘' | '’' | '“' | '”' | ':' | ',' | '(' | ')' | '[' | ']'
            )
        });
        word.starts_with('/').then(|| PathBuf::from(word))
    })
}

fn is_hidden(path: &Path, policy: &SandboxPolicy) -> bool {
    policy.hidden_paths.iter().any(|hidden| path.starts_with(hidden))
        || policy.existing_hidden_paths().iter().any(|hidden| path.starts_with(hidden))
}

#[cfg(test)]
mod tests;
