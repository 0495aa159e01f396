//! curl through the TCP endpoint: plain HTTP, a CONNECT tunnel (`-p`) and SOCKS5 with the proxy
//! resolving names (`socks5h://`), and a denied host. curl is installed by `.ci/run`.

use std::process::Command;

use codecoder_netproxy::Decision;

use crate::support::{Answer, Recorder, http_server, proxy};

fn curl(proxy_url: &str, extra: &[&str], url: &str) -> (bool, String, String) {
    let output = Command::new("curl")
        .args(["--silent", "--show-error", "--noproxy", "", "--max-time", "60", "-x", proxy_url])
        .args(extra)
        .arg(url)
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .output()
        .expect("curl is on PATH (.ci/run installs it)");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn curl_reaches_an_allowed_host_three_ways_and_reads_the_reason_for_a_denied_one() {
    let server = http_server();
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy(&["registry.test"], &["evil.test"], &[("registry.test", server)], &recorder);
    let endpoint = handle.tcp_endpoint("curl").unwrap();
    let address = endpoint.tcp_address().unwrap();
    let http_proxy = format!("http://{address}");
    let socks_proxy = format!("socks5h://{address}");
    for (proxy_url, extra) in
        [(&http_proxy, &[][..]), (&http_proxy, &["--proxytunnel"][..]), (&socks_proxy, &[][..])]
    {
        let (ok, stdout, stderr) = curl(proxy_url, extra, "http://registry.test/simple/pkg/");
        assert!(ok, "{proxy_url} {extra:?}: {stderr}");
        assert!(
            stdout.starts_with("GET /simple/pkg/ HTTP/1.1\r\n"),
            "{proxy_url} {extra:?}: {stdout}"
        );
    }
    let (ok, stdout, _) = curl(&http_proxy, &[], "http://evil.test/");
    assert!(ok);
    assert_eq!(
        stdout,
        "blocked by codecoder's network policy: evil.test is denied (denied_domains: evil.test)\n"
    );
    let (ok, _, stderr) = curl(&http_proxy, &[], "https://evil.test/");
    assert!(!ok);
    assert!(stderr.contains("403"), "{stderr}");
}
