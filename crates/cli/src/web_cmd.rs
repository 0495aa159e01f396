//! `codecoder serve`: binds the local HTTP server (`codecoder_serve`), prints its URL with the
//! token as the one line on stdout, and serves until Ctrl-C or TERM, which stop every hosted
//! session and remove `$CODECODER_HOME/serve.json`.
//!
//! Invariant: stdout gets exactly the URL line; notices and the plain-HTTP warning go to stderr.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

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
        max_events: codecoder_serve::MAX_KEPT_EVENTS,
    };
    drop(runtime);
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
    }
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
        if signals.forever().next().is_some() {
            stopper.stop();
        }
    })?;
    let mut stdout = std::io::stdout();
    if let Err(err) = writeln!(stdout, "{}", server.url()).and_then(|()| stdout.flush()) {
        handle.close();
        return Err(err.into());
    }

    let served = server.serve();
    handle.close();
    let _ = watcher.join();
    served?;
    Ok(ExitCode::SUCCESS)
}
