//! `codecoder acp`, `codecoder app-server` and `codecoder mcp-server`: a protocol server on this
//! process's stdin and stdout (`codecoder_acp`, `codecoder_app_server`, `codecoder_mcp_server`),
//! or, for `app-server --listen ws://`, on a WebSocket listener that says where it listens on
//! stderr.
//! Each loads the configuration once first, so a bad flag or config file fails at start (exit
//! 2) rather than at the first request.
//!
//! Invariant: nothing but the protocol reaches stdout; everything for the person (notices)
//! goes to stderr, which editors keep as the agent's log.

use std::io::{self, BufReader};
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::{AcpArgs, AppServerArgs, GlobalArgs, McpServerArgs, WsAuthMode};

pub(crate) fn run_acp(args: &AcpArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let mut overrides = global.overrides();
    overrides.model.clone_from(&args.model);
    overrides.provider.clone_from(&args.provider);
    codecoder_app::Runtime::load(overrides.clone())?;
    let config = codecoder_acp::ServeConfig {
        overrides,
        notice: Arc::new(|text: &str| eprintln!("{text}")),
    };
    codecoder_acp::serve(config, Box::new(BufReader::new(io::stdin())), Box::new(io::stdout()))?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run_app_server(
    args: &AppServerArgs,
    global: &GlobalArgs,
) -> anyhow::Result<ExitCode> {
    let listen = parse_listen(&args.listen)?;
    let auth = ws_auth(args)?;
    let runtime = crate::load_runtime(global, None, None)?;
    let home = runtime.home().to_owned();
    drop(runtime);
    let config = codecoder_app_server::ServeConfig {
        overrides: global.overrides(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let access_log = home.join("logs").join("app-server-access.log");
    let listen_config = codecoder_app_server::listen::ListenConfig {
        serve: config,
        auth: auth.clone(),
        access_log: access_log.clone(),
    };
    let listener = match listen {
        Listen::Stdio => {
            codecoder_app_server::serve(
                listen_config.serve,
                Box::new(BufReader::new(io::stdin())),
                Box::new(io::stdout()),
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        Listen::Tcp(addr) => codecoder_app_server::listen::WsListener::bind(addr, listen_config),
        Listen::Unix(path) => {
            let path = path.unwrap_or_else(|| home.join("app-server-control/app-server.sock"));
            codecoder_app_server::listen::WsListener::bind_unix(&path, listen_config)
        }
    }
    .map_err(|err| crate::exec::usage(error_chain(&err)))?;
    eprintln!("codecoder app-server (WebSocket)");
    eprintln!("  listening on: {}", listener.url());
    if let Some(local) = listener.local_addr() {
        eprintln!("  readyz: http://{local}/readyz");
        eprintln!("  healthz: http://{local}/healthz");
    }
    eprintln!("  access log: {}", access_log.display());
    match listener.local_addr() {
        Some(local) if !local.ip().is_loopback() => {
            eprintln!("  note: plain ws:// (no TLS): put it behind a TLS proxy for remote use");
        }
        Some(_) => {
            eprintln!("  note: loopback only; from another machine, forward the port over SSH");
        }
        None => eprintln!("  note: only this machine's users the socket file lets in can connect"),
    }
    if auth.is_none() {
        eprintln!("  note: no --ws-auth: any local program can connect");
    }
    // SIGTERM, SIGINT or SIGHUP stops the listener: every client's running turn is cancelled,
    // its agents shut down (their commands killed) and the socket file removed before the
    // process exits. A second signal kills what runs and exits at once.
    let stop = listener.stop_handle();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ])?;
    let signals_handle = signals.handle();
    // Detached: it waits for signals for as long as the process lives.
    std::thread::Builder::new().name("app-server-signals".to_owned()).spawn(move || {
        let mut seen = 0;
        for signal in signals.forever() {
            seen += 1;
            if seen == 1 {
                eprintln!("codecoder app-server: stopping (signal {signal})");
                stop.stop();
            } else {
                codecoder_app::kill_all();
                std::process::exit(128 + signal);
            }
        }
    })?;
    listener.run();
    signals_handle.close();
    Ok(ExitCode::SUCCESS)
}

/// Where `--listen` serves.
enum Listen {
    Stdio,
    Tcp(std::net::SocketAddr),
    /// A unix socket; `None`: the default one in the codecoder home.
    Unix(Option<std::path::PathBuf>),
}

fn parse_listen(listen: &str) -> anyhow::Result<Listen> {
    if listen == "stdio://" {
        return Ok(Listen::Stdio);
    }
    if let Some(path) = listen.strip_prefix("unix://") {
        return Ok(Listen::Unix((!path.is_empty()).then(|| path.into())));
    }
    let Some(addr) = listen.strip_prefix("ws://") else {
        return Err(crate::exec::usage(format!(
            "--listen {listen}: expected stdio://, ws://IP:PORT or unix://[PATH]"
        )));
    };
    let addr = addr.strip_suffix('/').unwrap_or(addr);
    addr.parse().map(Listen::Tcp).map_err(|_| {
        crate::exec::usage(format!(
            "--listen {listen}: expected ws://IP:PORT with an IP address, such as \
             ws://127.0.0.1:4500 (port 0 picks a free port)"
        ))
    })
}

/// The `--ws-*` flags, checked together.
fn ws_auth(args: &AppServerArgs) -> anyhow::Result<codecoder_app_server::listen::WsAuth> {
    use codecoder_app_server::listen::WsAuth;
    let usage = |message: &str| crate::exec::usage(message.to_owned());
    let token_flags = args.ws_token_file.is_some() || args.ws_token_sha256.is_some();
    let bearer_flags = args.ws_shared_secret_file.is_some()
        || args.ws_issuer.is_some()
        || args.ws_audience.is_some();
    let auth = match args.ws_auth {
        None if token_flags || bearer_flags => {
            return Err(usage(
                "the --ws-token-* and --ws-shared-secret-file, --ws-issuer, \
                 --ws-audience flags need --ws-auth",
            ));
        }
        None => Ok(WsAuth::None),
        Some(WsAuthMode::CapabilityToken) => {
            if bearer_flags {
                return Err(usage(
                    "--ws-auth capability-token takes --ws-token-file or \
                     --ws-token-sha256, not the signed-bearer-token flags",
                ));
            }
            match (&args.ws_token_file, &args.ws_token_sha256) {
                (Some(path), _) => WsAuth::token_file(path),
                (None, Some(hex)) => WsAuth::token_sha256(hex),
                (None, None) => {
                    return Err(usage(
                        "--ws-auth capability-token needs --ws-token-file or --ws-token-sha256",
                    ));
                }
            }
        }
        Some(WsAuthMode::SignedBearerToken) => {
            if token_flags {
                return Err(usage(
                    "--ws-auth signed-bearer-token takes --ws-shared-secret-file, \
                     not --ws-token-file or --ws-token-sha256",
                ));
            }
            let Some(secret) = &args.ws_shared_secret_file else {
                return Err(usage("--ws-auth signed-bearer-token needs --ws-shared-secret-file"));
            };
            WsAuth::signed_bearer(
                secret,
                args.ws_issuer.clone(),
                args.ws_audience.clone(),
                args.ws_max_clock_skew_seconds,
            )
        }
    };
    auth.map_err(|err| crate::exec::usage(error_chain(&err)))
}

/// An error and its sources, as one line.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

pub(crate) fn run_mcp_server(
    args: &McpServerArgs,
    global: &GlobalArgs,
) -> anyhow::Result<ExitCode> {
    let runtime = crate::load_runtime(global, args.model.clone(), args.provider.clone())?;
    let overrides = runtime.overrides().clone();
    drop(runtime);
    codecoder_mcp_server::serve_stdio(codecoder_mcp_server::Config {
        overrides,
        version: env!("CARGO_PKG_VERSION").to_owned(),
    })?;
    Ok(ExitCode::SUCCESS)
}
