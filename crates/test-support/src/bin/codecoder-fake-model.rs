//! `codecoder-fake-model`: runs the fake model server for manual runs. It prints the base URL
//! on the first line of stdout, then one JSON line per request on stderr, until killed.
//!
//! Arguments are parsed by hand (three flags) so that the dev-only library does not pull clap
//! into every test build that depends on it.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

const EXAMPLE: &str = include_str!("../../examples/script.json");

fn help() -> String {
    format!(
        "\
codecoder-fake-model: a fake model server on 127.0.0.1 for manual runs of codecoder.

USAGE:
    codecoder-fake-model [--script FILE.json] [--port N] [--quiet]

OPTIONS:
    --script FILE   the JSON script to play (default: every request gets a short text reply)
    --port N        the port to listen on (default 0: any free port)
    --quiet         do not log requests on stderr
    -h, --help      print this help

It prints its base URL (http://127.0.0.1:PORT) on the first line of stdout and logs one JSON
line per request on stderr. Point a provider at the base URL; the API is chosen by the path:
    POST /v1/responses, /responses                 OpenAI Responses
    POST /v1/chat/completions, /chat/completions   OpenAI-compatible Chat Completions
    POST /v1/messages[?beta=true], /messages       Anthropic Messages

SCRIPT FORMAT:
    {{\"steps\": [STEP, ...], \"when_exhausted\": STEP}}
The n-th request gets the n-th step; after the last step, `when_exhausted` (default: a 500 whose
message is \"fake model: script exhausted\").

A step is {{\"type\": \"reply\", ...}}, a 200 SSE stream in the API's format:
    text            \"Hello\" (split into `chunks` deltas) or [\"He\", \"\", \"llo\"] (exact deltas)
    chunks          number of text deltas (default 1)
    reasoning       {{\"text\", \"chunks\", \"signature\" (Anthropic signature / Responses
                    encrypted_content), \"raw\" (Responses reasoning_text instead of a summary),
                    \"chat_field\": \"reasoning_content\" | \"reasoning\"}}
    tool_calls      [{{\"id\", \"name\", \"arguments\": {{...}}, \"raw_arguments\": \"not json\"}}]
    arg_fragments   number of fragments per call's arguments (default 1)
    sequential_tool_calls  Chat: do not interleave the fragments of several calls
    usage           {{\"input_tokens\" (incl. cached), \"cached_tokens\", \"output_tokens\" (incl.
                    reasoning), \"reasoning_tokens\", \"cache_creation_tokens\"}}
    stop            \"end_turn\" | \"tool_use\" | \"max_tokens\" (default: tool_use with calls)
    chat_usage      \"auto\" (when stream_options.include_usage) | \"final_chunk\" |
                    \"finish_chunk\" | \"none\"
    delay_ms, pace_ms         wait before the head / between events
    split_utf8, split_pause_ms  write events in two parts split inside a multi-byte character
    keep_alive      a \": keep-alive\" comment before every event
    empty_deltas    an empty delta before every delta
    endless         repeat the last text delta every pace_ms until the client leaves
    coalesce        gather events into 64 KiB writes (throughput benchmarks)
    stamp           replace {{send_us}} in each event, as it is written, with the wall clock's
                    microseconds since the Unix epoch (latency benchmarks)
    stalls          [{{\"before\": EVENT_INDEX, \"ms\": N}}]
    inject          [{{\"before\": EVENT_INDEX, \"raw\": \"bytes written verbatim\"}}]
    malformed_before  EVENT_INDEX: an event with truncated JSON
    drop_after      N: close the connection after N events (no terminal event)
    error_after     {{\"after\": N, \"error_type\", \"message\"}}: the API's error event, then end
    end_after       N: end the stream cleanly after N events (no finish reason, no [DONE])
Event indexes count SSE events from 0 (comments and injected bytes excluded).

or {{\"type\": \"fault\", ...}}, an HTTP error with the API's error JSON:
    status          HTTP status (default 500; 429, 529 = Anthropic overloaded_error, ...)
    retry_after     seconds, sent as the Retry-After header
    error_type, message, body (replaces the whole JSON body), headers {{\"name\": \"value\"}}
    delay_ms        wait before answering
    hang_up         true: close the connection without any response

A script's \"when_streamed_tools\": STEP is what every streamed request that offers tools gets
(a server that cannot stream tool calls); other requests take the steps as usual.

A script's \"discovery\": {{\"/props\": {{...}}, \"/v1/models\": {{...}}, \"/api/show\": {{...}}}} answers
those paths (also /models, /api/tags, /api/ps, /api/v0/models; any method) with that JSON; a
discovery path it does not name gets a 404.

EXAMPLE (crates/test-support/examples/script.json):
{EXAMPLE}"
    )
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("codecoder-fake-model: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut script_path: Option<PathBuf> = None;
    let mut port: u16 = 0;
    let mut quiet = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => {
                print!("{}", help());
                return Ok(());
            }
            "--script" => {
                script_path = Some(args.next().ok_or("--script needs a file")?.into());
            }
            "--port" => {
                let value = args.next().ok_or("--port needs a number")?;
                port = value.parse().map_err(|_| format!("bad port {value:?}"))?;
            }
            "--quiet" => quiet = true,
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    let script = match &script_path {
        Some(path) => Script::load(path).map_err(|err| format!("{}: {err}", path.display()))?,
        None => Script::new().when_exhausted(Reply::text("Hello from the fake model.").chunks(3)),
    };
    let server = FakeModelServer::start_on(script, port).map_err(|err| err.to_string())?;
    println!("{}", server.base_url());
    let mut seen = 0;
    loop {
        let Ok(requests) = server.wait_for_requests(seen + 1, Duration::from_secs(3600)) else {
            continue;
        };
        for (idx, request) in requests.iter().enumerate().skip(seen) {
            if !quiet {
                let line = json!({
                    "n": idx + 1,
                    "method": request.method,
                    "path": request.path,
                    "query": request.query,
                    "model": request.body.get("model"),
                    "bytes": request.raw_body.len(),
                    "remaining_steps": server.remaining_steps(),
                });
                eprintln!("{line}");
            }
        }
        seen = requests.len();
    }
}
