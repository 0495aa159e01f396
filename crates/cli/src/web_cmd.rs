//! `codecoder serve`: binds the local HTTP server (`codecoder_serve`), prints its URL with the
//! token as the one line on stdout, optionally opens it in the browser (`--open`), and serves
//! until Ctrl-C or TERM, which stop every hosted session (turns cancelled, commands killed,
//! logs closed) and remove `$CODECODER_HOME/serve.json`; the server then exits 0, as it does
//! when stopped any other way. A second signal while it stops kills every command at once and
//! exits 128 + the signal, as the Claude headless mode does.
//!
//! Invariants: stdout gets exactly the URL line; notices, the plain-HTTP warning, the accepted
//! Host names, another server owning `serve.json` and a browser that could not be started go
//! to stderr; the browser is detached and never fails the server. The token never reaches a
//! command line: `--open` hands the browser a `file://` redirect page readable by the user
//! only (`$CODECODER_HOME/serve-open-PID.html`), removed when the server exits.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use codecoder_protocol::env;

use crate::cli::{GlobalArgs, ServeArgs};

pub(crate) fn run(args: &ServeArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let runtime = crate::load_runtime(global, args.model.clone(), args.provider.clone())?;
    let config = codecoder_serve::Config {
        listen: args.listen.clone(),
        auth_explicit: args.auth.is_some(),
        allowed_hosts: args.allow_host.clone(),
        overrides: runtime.overrides().clone(),
        home: runtime.home().to_owned(),
        default_cwd: runtime.cwd().to_owned(),
        max_events: args.max_events.unwrap_or(codecoder_serve::MAX_KEPT_EVENTS).max(1),
    };
    drop(runtime);
    let home = config.home.clone();
    let server = match codecoder_serve::Server::bind(config) {
        Ok(server) => server,
        Err(err) if err.is_usage() => return Err(crate::exec::usage(err.to_string())),
        Err(err) => return Err(err.into()),
    };
    let loopback = server
        .listen()
        .parse::<std::net::SocketAddr>()
        .map_or(true, |addr| addr.ip().is_loopback());
    if !loopback {
        eprintln!(
            "codecoder serve: listening on {} over plain HTTP: the token and everything else \
             travel unencrypted; put a TLS proxy or an SSH tunnel in front of it",
            server.listen()
        );
        eprintln!(
            "codecoder serve: requests are answered only when their Host is one of {}; add \
             another name or address of this machine with --allow-host NAME",
            server.hosts().join(", ")
        );
    }
    if let Some(other) = server.other_server() {
        eprintln!(
            "codecoder serve: {} belongs to the server at {} (pid {}), which still runs, and is \
             left to it; this server's URL is only the line printed on stdout",
            home.join(codecoder_serve::DISCOVERY_FILE).display(),
            other.url,
            other.pid
        );
    }
    // Where `--open` puts the redirect page; removed on every way out, the forced one included.
    let page_path = home.join(format!("serve-open-{}.html", std::process::id()));
    let forced_page = args.open.then(|| page_path.clone());
    // The handler is in place before the URL is out, so a client that stops the server as
    // soon as it has read the URL still gets a clean exit.
    let stopper = server.stopper();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .context("installing the signal handler")?;
    let handle = signals.handle();
    let watcher = codecoder_stdx::spawn_named("serve-signals", move || {
        let mut seen = 0;
        for signal in signals.forever() {
            seen += 1;
            if seen == 1 {
                stopper.stop();
            } else {
                // The person insists: whatever still runs is killed without waiting.
                codecoder_app::kill_all();
                if let Some(page) = &forced_page {
                    let _ = fs_err::remove_file(page);
                }
                std::process::exit(128 + signal);
            }
        }
    })?;
    let mut stdout = std::io::stdout();
    if let Err(err) = writeln!(stdout, "{}", server.url()).and_then(|()| stdout.flush()) {
        handle.close();
        return Err(err.into());
    }
    let _page = if args.open {
        match OpenPage::write(page_path, server.url()) {
            Ok(page) => {
                open_in_browser(&page.file_url());
                Some(page)
            }
            Err(err) => {
                eprintln!("codecoder serve: --open: {err}; open the URL above yourself");
                None
            }
        }
    } else {
        None
    };

    let served = server.serve();
    handle.close();
    let _ = watcher.join();
    served?;
    Ok(ExitCode::SUCCESS)
}

/// The page `--open` hands the browser: it sends it on to the tokened URL, so the token is in
/// a file only this user can read rather than in the browser's command line, which every
/// local user can see. Removed when dropped (the server has stopped).
struct OpenPage(PathBuf);

impl OpenPage {
    /// Writes the page at `path`, mode 0600 from creation (a file left there is replaced).
    fn write(path: PathBuf, url: &str) -> std::io::Result<Self> {
        use fs_err::os::unix::fs::OpenOptionsExt;
        let attribute = url
            .replace('&', "&amp;")
            .replace('"', "&quot;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        let script = serde_json::to_string(url)
            .map_err(std::io::Error::other)?
            .replace('<', "\\u003c")
            .replace('>', "\\u003e");
        let page = format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
             <meta http-equiv=\"refresh\" content=\"0;url={attribute}\">\
             <script>location.replace({script});</script></head></html>\n"
        );
        match fs_err::remove_file(&path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(err),
            _ => {}
        }
        let mut file =
            fs_err::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        let page_file = Self(path);
        file.write_all(page.as_bytes())?;
        Ok(page_file)
    }

    /// The page as a `file://` URL, its path percent-encoded where a URL needs it.
    fn file_url(&self) -> String {
        use std::os::unix::ffi::OsStrExt;
        let mut url = String::from("file://");
        for &byte in self.0.as_os_str().as_bytes() {
            if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
                url.push(char::from(byte));
            } else {
                url.push_str(&format!("%{byte:02X}"));
            }
        }
        url
    }
}

impl Drop for OpenPage {
    fn drop(&mut self) {
        let _ = fs_err::remove_file(&self.0);
    }
}

/// Opens `url` in the person's browser, detached: the first `$BROWSER` command that exists
/// (`:`-separated, `%s` standing for the URL, else the URL last), else `xdg-open` (`open` on
/// macOS). Says on stderr why when none could be started; never fails.
fn open_in_browser(url: &str) {
    let browser = std::env::var(env::BROWSER).unwrap_or_default();
    let mut candidates: Vec<Vec<String>> = browser
        .split(':')
        .map(|command| command.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|words| !words.is_empty())
        .collect();
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    candidates.push(vec![opener.to_owned()]);
    let path = std::env::var_os(env::PATH).unwrap_or_default();
    for words in candidates {
        let Some(program) = find_program(&words[0], &path) else { continue };
        let mut args: Vec<OsString> = Vec::new();
        let mut placed = false;
        for word in &words[1..] {
            placed |= word.contains("%s");
            args.push(word.replace("%s", url).into());
        }
        if !placed {
            args.push(url.into());
        }
        match codecoder_app::spawn_detached(program.as_os_str(), &args) {
            Ok(()) => return,
            Err(err) => eprintln!("codecoder serve: --open: {err}"),
        }
    }
    let tried = if browser.is_empty() {
        format!("$BROWSER is not set and {opener} was not found")
    } else {
        format!("neither $BROWSER ({browser}) nor {opener} could be found")
    };
    eprintln!("codecoder serve: --open: {tried}; open the URL above yourself");
}

/// `name` as a path when it names a file, or the first executable file of that name on `path`.
fn find_program(name: &str, path: &OsStr) -> Option<PathBuf> {
    let executable = |candidate: &Path| {
        use std::os::unix::fs::PermissionsExt;
        fs_err::metadata(candidate)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let candidate = PathBuf::from(name);
        return executable(&candidate).then_some(candidate);
    }
    std::env::split_paths(path).map(|dir| dir.join(name)).find(|candidate| executable(candidate))
}
