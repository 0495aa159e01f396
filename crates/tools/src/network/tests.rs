//! Unit tests of the managed network's notes and command summaries.

use super::{denial_note, short};

#[test]
fn no_denial_no_note() {
    assert_eq!(denial_note(&[], true), None);
}

#[test]
fn a_note_names_each_refused_host_and_what_to_do() {
    let denials = vec![
        ("evil.test:443".to_owned(), "evil.test is denied (denied_domains: evil.test)".to_owned()),
        ("10.0.0.1:80".to_owned(), "10.0.0.1 is a bare IP address".to_owned()),
    ];
    let asked = denial_note(&denials, true).unwrap_or_default();
    assert!(asked.contains("evil.test:443 (evil.test is denied"), "{asked}");
    assert!(asked.contains("10.0.0.1:80"), "{asked}");
    assert!(asked.contains("Do not retry"), "{asked}");
    let never = denial_note(&denials, false).unwrap_or_default();
    assert!(never.contains("allowed_domains"), "{never}");
    assert!(never.contains("ask the user"), "{never}");
}

#[test]
fn short_keeps_the_first_line_within_80_characters() {
    assert_eq!(short("curl https://x.test"), "curl https://x.test");
    assert_eq!(short("curl a\ncurl b"), "curl a…");
    let long = "é".repeat(100);
    assert_eq!(short(&long), format!("{}…", "é".repeat(80)));
}
