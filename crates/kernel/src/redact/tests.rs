//! Each shape redacted, the values of known secrets, and ordinary text left alone. The fake
//! secrets are assembled at run time, so the source holds no string a secret scanner flags.

use pretty_assertions::assert_eq;

use super::*;

fn redactor() -> Redactor {
    Redactor::new([
        Secret { name: "MY_SERVICE_TOKEN".into(), value: "hunter2-but-longer".into() },
        Secret { name: "SHORT_SECRET".into(), value: "abc".into() },
    ])
    .unwrap()
}

/// 36 characters in the three classes a generated token uses.
const BODY36: &str = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";

fn check(input: &str, expected: &str, count: usize) {
    let (out, n) = redactor().redact(input);
    assert_eq!(out, expected, "input: {input}");
    assert_eq!(n, count, "input: {input}");
}

fn untouched(input: &str) {
    check(input, input, 0);
}

#[test]
fn openai_keys() {
    let legacy = format!("sk-{BODY36}XyZ987654321");
    check(&format!("key={legacy}\n"), "key=[REDACTED:openai-key]\n", 1);
    let project = format!("sk-proj-{BODY36}-_{BODY36}");
    check(&format!("\"{project}\""), "\"[REDACTED:openai-key]\"", 1);
    let service = format!("sk-svcacct-{BODY36}");
    check(&service, "[REDACTED:openai-key]", 1);
}

#[test]
fn anthropic_keys() {
    let key = format!("sk-ant-api03-{BODY36}{BODY36}-AA");
    check(&format!("ANTHROPIC_API_KEY={key}"), "ANTHROPIC_API_KEY=[REDACTED:anthropic-key]", 1);
}

#[test]
fn google_api_keys() {
    let key = format!("AIza{}", &BODY36[..35]);
    check(&format!("?key={key}&x=1"), "?key=[REDACTED:google-api-key]&x=1", 1);
    // One character too many is not a Google key.
    untouched(&format!("AIza{BODY36}"));
}

#[test]
fn github_tokens() {
    for prefix in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"] {
        check(&format!("token {prefix}{BODY36} end"), "token [REDACTED:github-token] end", 1);
    }
    let fine_grained = format!("github_pat_11ABCDEFG0{BODY36}_{BODY36}");
    check(&fine_grained, "[REDACTED:github-token]", 1);
    // A remote URL with a token in it.
    check(
        &format!("https://x-access-token:ghs_{BODY36}@github.com/o/r.git"),
        "https://x-access-token:[REDACTED:github-token]@github.com/o/r.git",
        1,
    );
}

#[test]
fn gitlab_tokens() {
    check("glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn", "[REDACTED:gitlab-token]", 1);
}

#[test]
fn slack_tokens_and_webhooks() {
    for prefix in ["xoxb", "xoxp", "xoxa", "xoxr", "xoxs"] {
        check(
            &format!("{prefix}-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"),
            "[REDACTED:slack-token]",
            1,
        );
    }
    check(
        "curl -d @m.json https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "curl -d @m.json [REDACTED:slack-webhook]",
        1,
    );
}

#[test]
fn aws_keys() {
    let id = ["AKIA", "IOSFODNN7EXAMPLE"].concat();
    check(
        &format!("aws_access_key_id = {id}"),
        "aws_access_key_id = [REDACTED:aws-access-key-id]",
        1,
    );
    let session = ["ASIA", "Y34FZKBOKMUTVV7A"].concat();
    check(&session, "[REDACTED:aws-access-key-id]", 1);
    let secret = ["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKEY"].concat();
    check(
        &format!("aws_secret_access_key = {secret}\n"),
        "aws_secret_access_key = [REDACTED:aws-secret-access-key]\n",
        1,
    );
    check(
        &format!("export AWS_SECRET_ACCESS_KEY=\"{secret}\""),
        "export AWS_SECRET_ACCESS_KEY=\"[REDACTED:aws-secret-access-key]\"",
        1,
    );
    check(
        &format!("{{\"SecretAccessKey\": \"{secret}\"}}"),
        "{\"SecretAccessKey\": \"[REDACTED:aws-secret-access-key]\"}",
        1,
    );
    // Forty characters with no name next to them are not taken for a secret key.
    untouched(&format!("value: {secret}"));
}

#[test]
fn private_key_blocks() {
    let begin = ["-----BEGIN ", "RSA PRIVATE KEY-----"].concat();
    let end = ["-----END ", "RSA PRIVATE KEY-----"].concat();
    let block = format!("{begin}\nMIIEowIBAAKCAQEA1b2c3\nd4e5f6g7h8==\n{end}");
    check(&format!("before\n{block}\nafter\n"), "before\n[REDACTED:private-key]\nafter\n", 1);
    let openssh = [
        "-----BEGIN OPENSSH ",
        "PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----",
    ]
    .concat();
    check(&openssh, "[REDACTED:private-key]", 1);
    // Two blocks: each ends at its own end line, and the text between them stays.
    check(
        &format!("a\n{block}\nb\n{block}\nc"),
        "a\n[REDACTED:private-key]\nb\n[REDACTED:private-key]\nc",
        2,
    );
    // Cut short (the output was truncated): hidden to the end.
    check(&format!("x\n{begin}\nMIIEowIBAAKCAQEA1b2c3\n"), "x\n[REDACTED:private-key]", 1);
    // A public key or a certificate is not secret.
    untouched("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0C\n-----END PUBLIC KEY-----");
    untouched("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----");
}

#[test]
fn known_values() {
    check(
        "the token is hunter2-but-longer, again: hunter2-but-longer",
        "the token is [REDACTED:env:MY_SERVICE_TOKEN], again: [REDACTED:env:MY_SERVICE_TOKEN]",
        2,
    );
    // Too short to look for.
    untouched("abc abcdef");
}

#[test]
fn values_are_matched_as_literals_longest_first() {
    let redactor = Redactor::new([
        Secret { name: "A".into(), value: "p4ss.word".into() },
        Secret { name: "B".into(), value: "p4ss.word.and.more".into() },
    ])
    .unwrap();
    assert_eq!(redactor.redact("p4ss.word.and.more").0, "[REDACTED:env:B]");
    // `.` is not a wildcard.
    assert_eq!(redactor.redact("p4ssXword").1, 0);
}

#[test]
fn several_secrets_are_counted() {
    let github = format!("ghp_{BODY36}");
    let gitlab = "glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn";
    let redactor = redactor();
    let text = format!("{github} {gitlab} hunter2-but-longer");
    let (out, n) = redactor.redact(&text);
    assert_eq!(
        out,
        "[REDACTED:github-token] [REDACTED:gitlab-token] [REDACTED:env:MY_SERVICE_TOKEN]"
    );
    assert_eq!(n, 3);
}

#[test]
fn ordinary_text_is_left_alone() {
    untouched("commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: A <a@b.c>");
    untouched("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    untouched("id 123e4567-e89b-12d3-a456-426614174000");
    untouched("data: SGVsbG8sIFdvcmxkIQ== and aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgZW5jb2RlZA==");
    untouched("let task_description_for_the_long_running_worker = 1;");
    untouched("sk-learn-is-a-python-package-for-machine-learning-models");
    untouched("risk-assessment-document-with-a-very-long-hyphenated-name-2024");
    untouched("ghp_ is the prefix of a classic token; xoxb- is a bot token");
    untouched("AKIAshort and ASIA-pacific");
    untouched("fn main() { println!(\"héllo wörld\"); } // ünïcödé");
    untouched("secret_access_key = <your key here>");
}

#[test]
fn text_that_is_not_ascii_around_a_secret() {
    check(&format!("clé: ghp_{BODY36} — fin"), "clé: [REDACTED:github-token] — fin", 1);
}

#[test]
fn content_and_json() {
    let redactor = redactor();
    let mut content = vec![
        ContentItem::Text { text: format!("ghp_{BODY36}") },
        ContentItem::Text { text: "nothing".into() },
    ];
    assert_eq!(redactor.redact_content(&mut content), 1);
    assert_eq!(content[0], ContentItem::Text { text: "[REDACTED:github-token]".into() });
    let mut json = serde_json::json!({
        "content": [{"type": "text", "text": "hunter2-but-longer"}],
        "structuredContent": {"token": format!("ghp_{BODY36}"), "n": 1},
    });
    assert_eq!(redactor.redact_json(&mut json), 2);
    assert_eq!(json["content"][0]["text"], "[REDACTED:env:MY_SERVICE_TOKEN]");
    assert_eq!(json["structuredContent"]["token"], "[REDACTED:github-token]");
}

#[test]
fn tool_errors() {
    let redactor = redactor();
    let mut err = ToolError::Failed { message: format!("auth failed for ghp_{BODY36}") };
    assert_eq!(redactor.redact_error(&mut err), 1);
    assert_eq!(
        err,
        ToolError::Failed { message: "auth failed for [REDACTED:github-token]".into() }
    );
    let mut err = ToolError::TimedOut { limit_ms: 5 };
    assert_eq!(redactor.redact_error(&mut err), 0);
}

#[test]
fn notes() {
    assert_eq!(redaction_note(1), "(1 secret redacted)");
    assert_eq!(redaction_note(2), "(2 secrets redacted)");
}

#[test]
fn debug_shows_names_never_values() {
    let shown = format!("{:?}", redactor());
    assert!(shown.contains("MY_SERVICE_TOKEN"), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
}
