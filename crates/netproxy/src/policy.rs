//! The network policy: which hosts, ports and (for plain HTTP) requests a sandboxed command may
//! reach. Pure: checking a target never resolves a name or opens a socket.
//!
//! Invariants: a deny rule wins over any allow rule; `*.example.com` matches the subdomains of
//! example.com only, never example.com itself; a bare IP address is allowed only by a rule naming
//! that address (an allowed *name* is reached whatever address it resolves to); names compare in
//! lower case without a trailing dot; a name whose last label starts with a digit is not a name
//! (the system resolver would read `127.1` or `0x7f000001` as an address).
//!
//! A rule naming a path or methods (`GET github.com/myorg/**`) is enforced on plain HTTP, where
//! the proxy sees the request, and inside a tunnel to a host such a rule names
//! ([`NetworkPolicy::inspects`]), which the proxy terminates with TLS to see each request.

use std::fmt;
use std::net::IpAddr;

use globset::{GlobBuilder, GlobMatcher};

use crate::{Error, Result};

/// The port a tunnel to a host with path or method rules is inspected on (another needs a rule
/// naming it).
const HTTPS_PORT: u16 = 443;

/// A host as a client names it: a DNS name or an IP address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A name in lower case without a trailing dot.
    Name(String),
    /// A bare address.
    Ip(IpAddr),
}

impl Host {
    /// Parses a host as a request names it: a name, an IPv4 address, or an IPv6 address with or
    /// without brackets. `None` when it is none of these.
    pub fn parse(text: &str) -> Option<Host> {
        let unbracketed = text.strip_prefix('[').and_then(|rest| rest.strip_suffix(']'));
        if let Ok(ip) = unbracketed.unwrap_or(text).parse::<IpAddr>() {
            return Some(Host::Ip(ip));
        }
        let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
        valid_name(&name).then_some(Host::Name(name))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

fn valid_name(name: &str) -> bool {
    let labels_valid = name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    let last_is_numeric =
        name.rsplit('.').next().is_some_and(|last| last.starts_with(|c: char| c.is_ascii_digit()));
    !name.is_empty() && name.len() <= 253 && labels_valid && !last_is_numeric
}

/// The host part of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// Exactly this name.
    Exact(String),
    /// `*.suffix`: any name ending in `.suffix`, not `suffix` itself.
    Subdomains(String),
    /// Exactly this address.
    Ip(IpAddr),
}

impl HostPattern {
    /// True when `host` is one this pattern names.
    pub fn matches(&self, host: &Host) -> bool {
        match (self, host) {
            (HostPattern::Exact(pattern), Host::Name(name)) => pattern == name,
            (HostPattern::Subdomains(suffix), Host::Name(name)) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (HostPattern::Ip(pattern), Host::Ip(ip)) => pattern == ip,
            (HostPattern::Exact(_) | HostPattern::Subdomains(_), Host::Ip(_))
            | (HostPattern::Ip(_), Host::Name(_)) => false,
        }
    }
}

/// One entry of `allowed_domains` or `denied_domains`:
/// `[METHOD[,METHOD…] ]host[:port][/path-glob]`, where host is a name, `*.name` (subdomains
/// only), an IPv4 address or a bracketed IPv6 address, and the path glob's `*` stays within one
/// segment while `**` crosses them.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    preset: Option<&'static str>,
    host: HostPattern,
    port: Option<u16>,
    methods: Vec<String>,
    path: Option<GlobMatcher>,
}

impl Rule {
    /// Parses one rule.
    pub fn parse(text: &str) -> Result<Rule> {
        let invalid = |reason| Error::InvalidRule { rule: text.to_owned(), reason };
        let trimmed = text.trim();
        let (methods, target) = match trimmed.split_once(char::is_whitespace) {
            Some((methods, target)) => (methods, target.trim_start()),
            None => ("", trimmed),
        };
        let methods: Vec<String> = methods
            .split(',')
            .filter(|method| !method.is_empty())
            .map(str::to_ascii_uppercase)
            .collect();
        if methods.iter().any(|method| !method.bytes().all(|b| b.is_ascii_uppercase())) {
            return Err(invalid("a method is letters only, as in `GET,HEAD github.com/org/**`"));
        }
        let (authority, path) = match target.find('/') {
            Some(slash) => (&target[..slash], Some(&target[slash..])),
            None => (target, None),
        };
        let (host_text, port) = split_port(authority).ok_or_else(|| invalid("bad port"))?;
        let host = if let Some(suffix) = host_text.strip_prefix("*.") {
            match Host::parse(suffix) {
                Some(Host::Name(name)) => HostPattern::Subdomains(name),
                Some(Host::Ip(_)) | None => {
                    return Err(invalid("`*.` is followed by a domain name"));
                }
            }
        } else {
            match Host::parse(host_text) {
                Some(Host::Name(name)) => HostPattern::Exact(name),
                Some(Host::Ip(ip)) => HostPattern::Ip(ip),
                None if host_text.contains('*') => {
                    return Err(invalid("the only wildcard is a leading `*.` (subdomains)"));
                }
                None => return Err(invalid("not a host name or IP address")),
            }
        };
        let path = match path {
            None => None,
            Some(glob) => Some(
                GlobBuilder::new(glob)
                    .literal_separator(true)
                    .build()
                    .map_err(|_| invalid("bad path glob"))?
                    .compile_matcher(),
            ),
        };
        Ok(Rule { text: trimmed.to_owned(), preset: None, host, port, methods, path })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The preset the rule comes from, if any.
    pub fn preset(&self) -> Option<&'static str> {
        self.preset
    }

    /// The host part.
    pub fn host(&self) -> &HostPattern {
        &self.host
    }

    /// True when the rule covers every request to its host and port (no path, no methods).
    pub fn is_host_wide(&self) -> bool {
        self.methods.is_empty() && self.path.is_none()
    }

    fn matches_host(&self, host: &Host, port: u16) -> bool {
        self.host.matches(host) && self.port.is_none_or(|rule_port| rule_port == port)
    }

    fn matches_request(&self, request: &HttpRequest) -> bool {
        let method_ok = self.methods.is_empty() || self.methods.contains(&request.method);
        let path = request.path.split_once('?').map_or(request.path.as_str(), |(path, _)| path);
        method_ok && self.path.as_ref().is_none_or(|glob| glob.is_match(path))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.preset {
            Some(preset) => write!(f, "{} (preset {preset})", self.text),
            None => f.write_str(&self.text),
        }
    }
}

/// Splits `host[:port]` (`[v6]:port` for IPv6; a bare IPv6 address has no port). `None` when the
/// port is not a number.
fn split_port(authority: &str) -> Option<(&str, Option<u16>)> {
    if authority.starts_with('[') {
        let close = authority.find(']')?;
        let rest = &authority[close + 1..];
        return match rest.strip_prefix(':') {
            Some(port) => Some((&authority[..=close], Some(port.parse().ok()?))),
            None if rest.is_empty() => Some((authority, None)),
            None => None,
        };
    }
    match authority.matches(':').count() {
        1 => {
            let (host, port) = authority.split_once(':')?;
            Some((host, Some(port.parse().ok()?)))
        }
        _ => Some((authority, None)),
    }
}

/// A named set of hosts an ecosystem's tools need, allowed when the preset is opted into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// The name used in `allow_presets`.
    pub name: &'static str,
    /// The hosts it allows, every port.
    pub hosts: &'static [&'static str],
}

/// Every preset: package registries and forges.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "rust",
        // cargo's sparse index, the crate downloads, and rustup's toolchains.
        hosts: &["crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org"],
    },
    Preset {
        name: "python",
        // pip's index (and its old name, which redirects) and the package files.
        hosts: &["pypi.org", "pypi.python.org", "files.pythonhosted.org"],
    },
    Preset {
        name: "node",
        // npm's and yarn's registries, and node-gyp's header downloads.
        hosts: &["registry.npmjs.org", "registry.yarnpkg.com", "repo.yarnpkg.com", "nodejs.org"],
    },
    Preset {
        name: "github",
        // git over https and ssh, the API, archives, raw files and release assets.
        hosts: &[
            "github.com",
            "api.github.com",
            "codeload.github.com",
            "objects.githubusercontent.com",
            "raw.githubusercontent.com",
            "release-assets.githubusercontent.com",
        ],
    },
    Preset {
        name: "go",
        // The module proxy and the checksum database.
        hosts: &["proxy.golang.org", "sum.golang.org"],
    },
];

/// What a client asks to reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host as the client named it.
    pub host: Host,
    /// The port.
    pub port: u16,
    /// The request, when the proxy sees it (plain HTTP); `None` for a tunnel.
    pub request: Option<HttpRequest>,
}

/// A plain-HTTP request as the proxy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// The method, upper case.
    pub method: String,
    /// The path in origin form, query included.
    pub path: String,
}

/// How a client reached the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// An HTTP CONNECT tunnel (HTTPS, git over https through `HTTPS_PROXY`).
    Connect,
    /// A plain HTTP request in absolute form.
    Http,
    /// A SOCKS5 CONNECT (git over ssh, `ALL_PROXY`).
    Socks5,
}

impl fmt::Display for RequestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RequestKind::Connect => "CONNECT",
            RequestKind::Http => "HTTP",
            RequestKind::Socks5 => "SOCKS5",
        })
    }
}

/// The policy's answer for a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Reach it.
    Allow,
    /// Refuse, with the reason the client is told.
    Deny(DenyReason),
    /// No rule decides: ask the user.
    Ask,
}

/// Why a target is refused. Its `Display` is the sentence the client (and so the model) reads.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DenyReason {
    /// A rule of `denied_domains` names it.
    Denied { host: Host, rule: String },
    /// A bare IP address no rule lists.
    IpNotListed { host: Host },
    /// The host is allowed for other paths or methods only.
    RequestNotAllowed { host: Host, method: String, path: String },
    /// The client named something that is not a host.
    InvalidHost { text: String },
    /// The user (or a non-interactive approval policy) declined it.
    Declined { host: Host },
}

impl fmt::Display for DenyReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DenyReason::Denied { host, rule } => {
                write!(f, "{host} is denied (denied_domains: {rule})")
            }
            DenyReason::IpNotListed { host } => write!(
                f,
                "{host} is a bare IP address, reached only when listed in allowed_domains"
            ),
            DenyReason::RequestNotAllowed { host, method, path } => {
                write!(
                    f,
                    "{method} {host}{path} is outside the paths and methods allowed for {host}"
                )
            }
            DenyReason::InvalidHost { text } => write!(f, "{text:?} is not a host name"),
            DenyReason::Declined { host } => {
                write!(f, "{host} is not in allowed_domains and access was not approved")
            }
        }
    }
}

/// The allowed and denied rules, presets expanded.
#[derive(Debug, Clone)]
pub struct NetworkPolicy {
    allowed: Vec<Rule>,
    denied: Vec<Rule>,
}

impl NetworkPolicy {
    /// Builds a policy from `allowed_domains`, `denied_domains` and `allow_presets`.
    pub fn new(allowed: &[String], denied: &[String], presets: &[String]) -> Result<Self> {
        let mut allowed_rules =
            allowed.iter().map(|rule| Rule::parse(rule)).collect::<Result<Vec<_>>>()?;
        for name in presets {
            let Some(preset) = PRESETS.iter().find(|preset| preset.name == name) else {
                let known = PRESETS.iter().map(|preset| preset.name).collect::<Vec<_>>();
                return Err(Error::UnknownPreset { name: name.clone(), known: known.join(", ") });
            };
            for host in preset.hosts {
                let mut rule = Rule::parse(host)?;
                rule.preset = Some(preset.name);
                allowed_rules.push(rule);
            }
        }
        let denied = denied.iter().map(|rule| Rule::parse(rule)).collect::<Result<Vec<_>>>()?;
        Ok(NetworkPolicy { allowed: allowed_rules, denied })
    }

    /// The allow rules, presets' hosts included.
    pub fn allowed(&self) -> &[Rule] {
        &self.allowed
    }

    /// The deny rules.
    pub fn denied(&self) -> &[Rule] {
        &self.denied
    }

    /// True when a rule naming paths or methods covers `host:port`, on 443 or on the port the
    /// rule names: a tunnel there is terminated (TLS inspection) so each request inside can be
    /// checked. Another port of such a host (git over ssh on 22) is a tunnel asked about, as
    /// TLS is not expected there.
    pub fn inspects(&self, host: &Host, port: u16) -> bool {
        self.allowed.iter().chain(&self.denied).any(|rule| {
            !rule.is_host_wide()
                && rule.matches_host(host, port)
                && (port == HTTPS_PORT || rule.port == Some(port))
        })
    }

    /// True when some rule names paths or methods, so some tunnel may be inspected (and the
    /// session's CA is needed).
    pub fn inspects_any(&self) -> bool {
        self.allowed.iter().chain(&self.denied).any(|rule| !rule.is_host_wide())
    }

    /// The verdict for a target.
    pub fn check(&self, target: &Target) -> Verdict {
        let Target { host, port, request } = target;
        // A deny rule with a path or methods is unenforceable in a tunnel, which hides the
        // request: such a tunnel is never allowed by policy alone.
        let mut tunnel_hides_deny = false;
        for rule in self.denied.iter().filter(|rule| rule.matches_host(host, *port)) {
            let applies = match request {
                _ if rule.is_host_wide() => true,
                Some(request) => rule.matches_request(request),
                None => {
                    tunnel_hides_deny = true;
                    false
                }
            };
            if applies {
                return Verdict::Deny(DenyReason::Denied {
                    host: host.clone(),
                    rule: rule.to_string(),
                });
            }
        }
        let mut allowed_elsewhere = false;
        for rule in self.allowed.iter().filter(|rule| rule.matches_host(host, *port)) {
            match request {
                _ if rule.is_host_wide() && !tunnel_hides_deny => return Verdict::Allow,
                Some(request) if rule.matches_request(request) => return Verdict::Allow,
                Some(_) | None => allowed_elsewhere = true,
            }
        }
        match (request, host) {
            (Some(request), _) if allowed_elsewhere => {
                Verdict::Deny(DenyReason::RequestNotAllowed {
                    host: host.clone(),
                    method: request.method.clone(),
                    path: request.path.clone(),
                })
            }
            (_, Host::Ip(_)) if !allowed_elsewhere => {
                Verdict::Deny(DenyReason::IpNotListed { host: host.clone() })
            }
            (_, Host::Ip(_) | Host::Name(_)) => Verdict::Ask,
        }
    }
}
