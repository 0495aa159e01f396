//! The macOS Seatbelt (`sandbox-exec`) profile for a policy, as SBPL text. Generated on every OS
//! so that it is unit tested everywhere; only macOS runs it.
//!
//! Invariants:
//! - The profile starts from `(deny default)`; everything allowed is listed.
//! - Reads are allowed everywhere except under the hidden paths; writes only under the writable
//!   roots (or everywhere under full access) minus the protected subpaths and the hidden paths;
//!   the network only when the policy allows it. Exclusions are `require-not` clauses inside the
//!   allow rule itself, so the result does not depend on rule order.
//! - Every path is written as an escaped SBPL string literal.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::policy::{FsAccess, SandboxPolicy};

/// The SBPL profile that confines a command under `policy` (for `sandbox-exec -p`).
pub fn seatbelt_profile(policy: &SandboxPolicy) -> String {
    let hidden = with_canonical(&policy.hidden_paths);
    let mut profile = String::from(
        "(version 1)\n\
         (deny default)\n\
         (allow process-exec)\n\
         (allow process-fork)\n\
         (allow signal (target same-sandbox))\n\
         (allow process-info* (target same-sandbox))\n\
         (allow sysctl-read)\n\
         (allow mach-lookup)\n\
         (allow ipc-posix-sem)\n\
         (allow ipc-posix-shm)\n\
         (allow pseudo-tty)\n\
         (allow file-ioctl)\n",
    );
    profile.push_str("(allow file-read*\n  (require-all\n    (subpath \"/\")");
    for path in &hidden {
        let _ = write!(profile, "\n    (require-not {})", path_filter(path));
    }
    profile.push_str("))\n");

    let mut excluded: Vec<PathBuf> = hidden.clone();
    let roots = match policy.access {
        FsAccess::ReadOnly => Vec::new(),
        FsAccess::FullAccess => vec![PathBuf::from("/")],
        FsAccess::WorkspaceWrite => {
            // Seatbelt can deny paths that do not exist yet: the names directly in each root
            // whether or not they exist, plus what exists.
            let roots = with_canonical(&policy.writable_roots);
            excluded.extend(policy.guard().literal());
            excluded.extend(policy.protected_subpaths());
            roots
        }
    };
    excluded.sort();
    excluded.dedup();
    for root in &roots {
        let _ =
            write!(profile, "(allow file-write*\n  (require-all\n    (subpath {})", quote(root));
        for path in excluded.iter().filter(|path| path.starts_with(root)) {
            let _ = write!(profile, "\n    (require-not {})", path_filter(path));
        }
        profile.push_str("))\n");
    }
    profile.push_str(
        "(allow file-write-data\n  (literal \"/dev/null\")\n  (literal \"/dev/zero\")\n  \
         (literal \"/dev/tty\")\n  (regex #\"^/dev/ttys[0-9]+$\"))\n",
    );
    if policy.network {
        profile.push_str(
            "(allow network-outbound)\n(allow network-inbound)\n(allow network-bind)\n\
             (allow system-socket)\n",
        );
    } else {
        profile.push_str("(allow network-outbound (remote unix-socket))\n(allow system-socket (socket-domain AF_UNIX))\n");
    }
    profile
}

/// Each path, plus its canonical form when that differs (`/tmp` is `/private/tmp` on macOS, and
/// Seatbelt matches the resolved path).
fn with_canonical(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for path in paths {
        out.push(path.clone());
        if let Ok(canonical) = fs_err::canonicalize(path)
            && canonical != *path
        {
            out.push(canonical);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `(subpath "p")` covers a directory and everything under it, and a file itself.
fn path_filter(path: &Path) -> String {
    format!("(subpath {})", quote(path))
}

fn quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            other => out.push(other),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
