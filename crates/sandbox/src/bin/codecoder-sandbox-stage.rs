//! A stand-alone re-exec stage for this crate's own tests and benchmark (the product's `main`
//! calls `run_stage_if_requested` itself and passes its own executable). Started without the
//! stage marker it only says what it is for.

fn main() {
    codecoder_sandbox::run_stage_if_requested();
    #[allow(clippy::print_stderr)] // A binary's `main`: its usage line is its output.
    {
        eprintln!(
            "codecoder-sandbox-stage: internal helper; run as `{} -- COMMAND…`",
            codecoder_sandbox::STAGE_MARKER
        );
    }
    std::process::exit(2);
}
