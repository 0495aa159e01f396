//! Unit tests of the request reader and the guard's decisions.

use std::io::BufReader;

use crate::guard::{Access, Guard, same};
use crate::http::{Request, loggable_target, percent_decode, read_request};

const TOKEN: &str = "t0k3n";
const COOKIE: &str = "c00k1e";

fn guard() -> Guard {
    Guard::new(
        TOKEN.to_owned(),
        COOKIE.to_owned(),
        4000,
        vec!["127.0.0.1:4000".to_owned(), "localhost:4000".to_owned()],
    )
}

fn parse(raw: &str) -> Request {
    read_request(&mut BufReader::new(raw.as_bytes())).unwrap()
}

fn status(access: &Access) -> u16 {
    match access {
        Access::Allowed => 0,
        Access::Exchange(response) | Access::Refused(response) => response.status,
    }
}

#[test]
fn reads_a_request_with_its_body_and_query() {
    let request =
        parse("POST /api/sessions?q=a%20b&x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/api/sessions");
    assert_eq!(request.query_param("q").as_deref(), Some("a b"));
    assert_eq!(request.header("host"), Some("h"));
    assert_eq!(request.body, b"{}");
}

#[test]
fn percent_decoding_keeps_bad_escapes() {
    assert_eq!(percent_decode("a%2Fb+c%zz%"), "a/b c%zz%");
}

#[test]
fn the_log_never_holds_the_token() {
    assert_eq!(loggable_target("/", "token=secret&x=1"), "/?token=REDACTED&x=1");
    assert_eq!(loggable_target("/api", ""), "/api");
}

#[test]
fn a_foreign_host_is_refused_before_anything_else() {
    let request = parse(&format!(
        "GET / HTTP/1.1\r\nHost: evil.example:4000\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    ));
    assert_eq!(status(&guard().check(&request)), 403);
}

#[test]
fn no_token_and_a_wrong_token_are_refused() {
    let none = parse("GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:4000\r\n\r\n");
    assert_eq!(status(&guard().check(&none)), 401);
    let wrong = parse("GET /?token=nope HTTP/1.1\r\nHost: 127.0.0.1:4000\r\n\r\n");
    assert_eq!(status(&guard().check(&wrong)), 401);
    let wrong_bearer = parse(
        "GET /api/sessions HTTP/1.1\r\nHost: localhost:4000\r\nAuthorization: Bearer nope\r\n\r\n",
    );
    assert_eq!(status(&guard().check(&wrong_bearer)), 401);
}

#[test]
fn the_token_is_exchanged_for_a_strict_cookie_which_then_works() {
    let request = parse(&format!("GET /?token={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1:4000\r\n\r\n"));
    let Access::Exchange(response) = guard().check(&request) else { panic!("not exchanged") };
    assert_eq!(response.status, 303);
    let cookie = &response.headers.iter().find(|(name, _)| *name == "Set-Cookie").unwrap().1;
    assert_eq!(
        cookie,
        &format!("codecoder_session_4000={COOKIE}; HttpOnly; SameSite=Strict; Path=/")
    );
    let with_cookie = parse(&format!(
        "GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nCookie: a=b; codecoder_session_4000={COOKIE}\r\n\r\n"
    ));
    assert!(matches!(guard().check(&with_cookie), Access::Allowed));
    let again = parse(&format!(
        "GET /?token={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nCookie: codecoder_session_4000={COOKIE}\r\n\r\n"
    ));
    assert_eq!(status(&guard().check(&again)), 303, "the address bar drops the token every time");
    let token_as_cookie = parse(&format!(
        "GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nCookie: codecoder_session_4000={TOKEN}\r\n\r\n"
    ));
    assert_eq!(status(&guard().check(&token_as_cookie)), 401);
}

#[test]
fn a_cross_origin_mutation_or_upgrade_is_refused_and_the_own_origin_is_not() {
    let post = |origin: &str| {
        parse(&format!(
            "POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nOrigin: {origin}\r\n\
             Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n"
        ))
    };
    assert_eq!(status(&guard().check(&post("http://evil.example"))), 403);
    assert_eq!(status(&guard().check(&post("http://127.0.0.1:4001"))), 403);
    assert!(matches!(guard().check(&post("http://localhost:4000")), Access::Allowed));
    let upgrade = parse(&format!(
        "GET /api/sessions/x/events HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nUpgrade: websocket\r\n\
         Origin: http://evil.example\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    ));
    assert_eq!(status(&guard().check(&upgrade)), 403);
}

#[test]
fn mutations_take_json_only() {
    let post = |content_type: &str| {
        parse(&format!(
            "POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: {content_type}\r\nContent-Length: 0\r\n\r\n"
        ))
    };
    assert_eq!(status(&guard().check(&post("text/plain"))), 415);
    assert_eq!(status(&guard().check(&post("application/x-www-form-urlencoded"))), 415);
    assert!(matches!(guard().check(&post("application/json; charset=utf-8")), Access::Allowed));
}

#[test]
fn secrets_compare_equal_only_when_equal() {
    assert!(same("abc", "abc"));
    assert!(!same("abd", "abc"));
    assert!(!same("ab", "abc"));
}

/// The checked-in `api-schema.json` is what the types generate (regenerate with
/// `CODECODER_UPDATE_SCHEMA=1 cargo test -p codecoder-serve schema`).
#[test]
fn the_api_schema_file_is_up_to_date() {
    use codecoder_protocol::env;
    let actual = serde_json::to_string_pretty(&crate::types::schema()).unwrap() + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("api-schema.json");
    if std::env::var_os(env::UPDATE_SCHEMA).is_some()
        || std::env::var_os(env::UPDATE_EXPECT).is_some()
    {
        fs_err::write(&path, &actual).unwrap();
        return;
    }
    let expected = fs_err::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{} is stale: run `CODECODER_UPDATE_SCHEMA=1 cargo test -p codecoder-serve schema` and commit it",
        path.display()
    );
}

#[test]
fn the_schema_names_every_route_with_its_shapes() {
    let schema = crate::types::schema();
    let routes = schema["routes"].as_array().unwrap();
    let find = |method: &str, path: &str| {
        routes
            .iter()
            .find(|r| r["method"] == method && r["path"] == path)
            .unwrap_or_else(|| panic!("{method} {path} missing"))
    };
    assert_eq!(
        find("POST", "/api/sessions/{id}/rewind")["request"]["$ref"],
        "#/definitions/RewindBody"
    );
    assert_eq!(find("GET", "/api/projects")["response"]["$ref"], "#/definitions/Projects");
    let definitions = schema["definitions"].as_object().unwrap();
    let start = &definitions["StartBody"]["properties"];
    for field in ["cwd", "prompt", "resume", "fork", "model", "effort", "permissionMode"] {
        assert!(start.get(field).is_some(), "StartBody lacks {field}: {start:#}");
    }
    let item = &definitions["StreamItem"]["properties"];
    for field in ["seq", "sessionId", "event", "approvalResolved", "questionResolved", "gap"] {
        assert!(item.get(field).is_some(), "StreamItem lacks {field}: {item:#}");
    }
}
