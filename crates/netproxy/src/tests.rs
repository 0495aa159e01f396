//! Unit tests of the policy (rules, wildcards, presets, deny over allow, bare addresses, path
//! rules) and of request-line parsing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::conn::parse_authority;
use crate::{DenyReason, Host, HttpRequest, NetworkPolicy, Rule, Target, Verdict};

fn policy(allowed: &[&str], denied: &[&str], presets: &[&str]) -> NetworkPolicy {
    let strings = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    NetworkPolicy::new(&strings(allowed), &strings(denied), &strings(presets)).unwrap()
}

fn tunnel(host: &str, port: u16) -> Target {
    Target { host: Host::parse(host).unwrap(), port, request: None }
}

fn http(host: &str, method: &str, path: &str) -> Target {
    Target {
        host: Host::parse(host).unwrap(),
        port: 80,
        request: Some(HttpRequest { method: method.to_owned(), path: path.to_owned() }),
    }
}

#[test]
fn exact_names_match_case_and_trailing_dot_insensitively() {
    let policy = policy(&["Example.COM"], &[], &[]);
    assert_eq!(policy.check(&tunnel("example.com", 443)), Verdict::Allow);
    assert_eq!(policy.check(&tunnel("EXAMPLE.com.", 443)), Verdict::Allow);
    assert_eq!(policy.check(&tunnel("www.example.com", 443)), Verdict::Ask);
    assert_eq!(policy.check(&tunnel("notexample.com", 443)), Verdict::Ask);
}

#[test]
fn a_wildcard_matches_subdomains_only() {
    let policy = policy(&["*.example.com"], &[], &[]);
    assert_eq!(policy.check(&tunnel("a.example.com", 443)), Verdict::Allow);
    assert_eq!(policy.check(&tunnel("a.b.example.com", 443)), Verdict::Allow);
    assert_eq!(policy.check(&tunnel("example.com", 443)), Verdict::Ask);
    assert_eq!(policy.check(&tunnel("badexample.com", 443)), Verdict::Ask);
}

#[test]
fn deny_wins_over_allow() {
    let policy = policy(&["*.example.com", "example.com"], &["evil.example.com"], &[]);
    assert_eq!(policy.check(&tunnel("good.example.com", 443)), Verdict::Allow);
    let Verdict::Deny(reason) = policy.check(&tunnel("evil.example.com", 443)) else {
        panic!("evil.example.com is denied");
    };
    assert_eq!(reason.to_string(), "evil.example.com is denied (denied_domains: evil.example.com)");
    let wide = self::policy(&["evil.com"], &["*.com"], &[]);
    assert!(matches!(
        wide.check(&tunnel("evil.com", 443)),
        Verdict::Deny(DenyReason::Denied { .. })
    ));
}

#[test]
fn a_port_in_a_rule_restricts_it_to_that_port() {
    let policy = policy(&["localhost:8080"], &[], &[]);
    assert_eq!(policy.check(&tunnel("localhost", 8080)), Verdict::Allow);
    assert_eq!(policy.check(&tunnel("localhost", 8081)), Verdict::Ask);
}

#[test]
fn bare_addresses_are_reached_only_when_listed() {
    let policy = policy(&["127.0.0.1", "[::1]:8443", "example.com"], &[], &[]);
    assert_eq!(policy.check(&tunnel("127.0.0.1", 1)), Verdict::Allow);
    assert_eq!(policy.check(&tunnel("[::1]", 8443)), Verdict::Allow);
    assert_eq!(
        policy.check(&tunnel("[::1]", 22)),
        Verdict::Deny(DenyReason::IpNotListed { host: Host::Ip(IpAddr::V6(Ipv6Addr::LOCALHOST)) })
    );
    let Verdict::Deny(reason) = policy.check(&tunnel("10.0.0.1", 443)) else {
        panic!("an unlisted address is denied, not asked about");
    };
    assert_eq!(
        reason,
        DenyReason::IpNotListed { host: Host::Ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))) }
    );
}

#[test]
fn names_the_resolver_would_read_as_addresses_are_not_names() {
    for text in ["127.1", "0x7f000001", "2130706433", "10.0.0.1.5", "a..b", "", "bad host"] {
        assert_eq!(Host::parse(text), None, "{text:?}");
    }
    assert_eq!(Host::parse("localhost"), Some(Host::Name("localhost".to_owned())));
    assert_eq!(Host::parse("x1.example"), Some(Host::Name("x1.example".to_owned())));
}

#[test]
fn presets_expand_to_their_hosts() {
    let policy = policy(&[], &[], &["rust", "python", "node", "github", "go"]);
    for host in [
        "crates.io",
        "index.crates.io",
        "static.crates.io",
        "static.rust-lang.org",
        "pypi.org",
        "files.pythonhosted.org",
        "registry.npmjs.org",
        "github.com",
        "api.github.com",
        "codeload.github.com",
        "objects.githubusercontent.com",
        "raw.githubusercontent.com",
        "proxy.golang.org",
    ] {
        assert_eq!(policy.check(&tunnel(host, 443)), Verdict::Allow, "{host}");
    }
    assert_eq!(policy.check(&tunnel("gitlab.com", 443)), Verdict::Ask);
    let rule = policy.allowed().iter().find(|rule| rule.text() == "crates.io").unwrap();
    assert_eq!(rule.preset(), Some("rust"));
    assert_eq!(rule.to_string(), "crates.io (preset rust)");
    let unknown = NetworkPolicy::new(&[], &[], &["ruby".to_owned()]).unwrap_err().to_string();
    assert_eq!(unknown, r#"unknown network preset "ruby" (known: rust, python, node, github, go)"#);
}

#[test]
fn path_and_method_rules_decide_plain_http_and_ask_at_a_tunnel() {
    let policy = policy(&["GET,HEAD github.com/myorg/**"], &["api.example.com/admin/**"], &[]);
    assert_eq!(policy.check(&http("github.com", "GET", "/myorg/repo/info?x=1")), Verdict::Allow);
    assert_eq!(
        policy.check(&http("github.com", "POST", "/myorg/repo")),
        Verdict::Deny(DenyReason::RequestNotAllowed {
            host: Host::Name("github.com".to_owned()),
            method: "POST".to_owned(),
            path: "/myorg/repo".to_owned(),
        })
    );
    assert!(matches!(
        policy.check(&http("github.com", "GET", "/other/repo")),
        Verdict::Deny(DenyReason::RequestNotAllowed { .. })
    ));
    // A tunnel hides the request: the host is asked about.
    assert_eq!(policy.check(&tunnel("github.com", 443)), Verdict::Ask);
    assert!(matches!(
        policy.check(&http("api.example.com", "GET", "/admin/users")),
        Verdict::Deny(DenyReason::Denied { .. })
    ));
    assert_eq!(policy.check(&http("api.example.com", "GET", "/public")), Verdict::Ask);
    // Allowed as a whole, but a path of it denied: a tunnel could reach that path.
    let mixed = self::policy(&["api.example.com"], &["api.example.com/admin/**"], &[]);
    assert_eq!(mixed.check(&tunnel("api.example.com", 443)), Verdict::Ask);
    assert_eq!(mixed.check(&http("api.example.com", "GET", "/public")), Verdict::Allow);
}

#[test]
fn a_single_star_stays_within_a_path_segment() {
    let policy = policy(&["example.com/docs/*"], &[], &[]);
    assert_eq!(policy.check(&http("example.com", "GET", "/docs/a")), Verdict::Allow);
    assert!(matches!(
        policy.check(&http("example.com", "GET", "/docs/a/b")),
        Verdict::Deny(DenyReason::RequestNotAllowed { .. })
    ));
}

#[test]
fn invalid_rules_say_why() {
    for (text, reason) in [
        ("exa*mple.com", "the only wildcard is a leading `*.` (subdomains)"),
        ("*.1.2.3.4", "`*.` is followed by a domain name"),
        ("example.com:http", "bad port"),
        ("G3T example.com", "a method is letters only, as in `GET,HEAD github.com/org/**`"),
        ("exa mple.com extra", "not a host name or IP address"),
    ] {
        let error = Rule::parse(text).unwrap_err().to_string();
        assert_eq!(error, format!("invalid network rule {text:?}: {reason}"));
    }
}

#[test]
fn authorities_parse_with_and_without_ports() {
    let name = |n: &str| Host::Name(n.to_owned());
    assert_eq!(parse_authority("example.com:443", None), Some((name("example.com"), 443)));
    assert_eq!(parse_authority("example.com", Some(80)), Some((name("example.com"), 80)));
    assert_eq!(parse_authority("example.com", None), None);
    assert_eq!(
        parse_authority("[::1]:8080", None),
        Some((Host::Ip(IpAddr::V6(Ipv6Addr::LOCALHOST)), 8080))
    );
    assert_eq!(parse_authority("::1:8080", None), None);
    assert_eq!(parse_authority("user:pw@example.com", Some(80)), None);
    assert_eq!(parse_authority("example.com:99999", None), None);
}

#[test]
fn a_tunnel_is_inspected_on_443_or_the_port_a_path_rule_names() {
    let rules =
        policy(&["GET forge.test/org/**", "POST api.test:8443/v1/**", "plain.test"], &[], &[]);
    let name = |text: &str| Host::Name(text.to_owned());
    assert!(rules.inspects(&name("forge.test"), 443));
    // git over ssh to the same host is not TLS: tunnelled (and asked about), not inspected.
    assert!(!rules.inspects(&name("forge.test"), 22));
    assert!(rules.inspects(&name("api.test"), 8443));
    assert!(!rules.inspects(&name("api.test"), 443));
    assert!(!rules.inspects(&name("plain.test"), 443));
    assert!(rules.inspects_any());
    assert!(!policy(&["plain.test"], &[], &["rust"]).inspects_any());
}
