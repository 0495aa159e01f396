//! `codecoder hooks list|trust`: the hooks a session here would find, where each comes from,
//! whether it runs, and the approval of a project's new or changed hooks.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use codecoder_app::HookReview;

use crate::cli::{GlobalArgs, HooksCommand};

pub(crate) fn run(
    command: HooksCommand,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let runtime = codecoder_app::Runtime::load(global.overrides())?;
    let review = codecoder_app::review_hooks(&runtime)?;
    match command {
        HooksCommand::List => {
            list(&review, out)?;
            Ok(ExitCode::SUCCESS)
        }
        HooksCommand::Trust(args) => {
            if !review.project_trusted {
                writeln!(
                    out,
                    "{} is not trusted, so its hook files are not read: run `codecoder trust` first",
                    review.root.display()
                )?;
                return Ok(ExitCode::FAILURE);
            }
            let pending = review.pending();
            // Each named digest (a prefix is enough) must name a pending hook.
            for wanted in &args.digests {
                anyhow::ensure!(
                    pending.iter().any(|hook| hook.digest.starts_with(wanted.as_str())),
                    "no project hook waiting for review has a digest starting with `{wanted}` \
                     (`codecoder hooks list` shows them)"
                );
            }
            let chosen: Vec<String> = pending
                .iter()
                .filter(|hook| {
                    args.digests.is_empty()
                        || args
                            .digests
                            .iter()
                            .any(|wanted| hook.digest.starts_with(wanted.as_str()))
                })
                .map(|hook| hook.digest.clone())
                .collect();
            if chosen.is_empty() {
                writeln!(out, "no project hook waits for review in {}", review.root.display())?;
                return Ok(ExitCode::SUCCESS);
            }
            codecoder_hooks_approve(&runtime, &review, &chosen)?;
            writeln!(out, "approved for {}:", review.root.display())?;
            for hook in pending.iter().filter(|hook| chosen.contains(&hook.digest)) {
                writeln!(out, "  {}", line(hook))?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn codecoder_hooks_approve(
    runtime: &codecoder_app::Runtime,
    review: &HookReview,
    digests: &[String],
) -> anyhow::Result<()> {
    codecoder_app::approve_hooks(runtime.home(), &review.root, digests)
        .context("recording the approved hooks")?;
    Ok(())
}

/// `DIGEST EVENT [MATCHER] COMMAND from SOURCE`.
fn line(hook: &codecoder_app::HookEntry) -> String {
    format!(
        "{} {} [{}] {} from {}",
        hook.short_digest(),
        hook.event,
        hook.matcher,
        hook.command,
        hook.source.display()
    )
}

fn list(review: &HookReview, out: &mut dyn Write) -> anyhow::Result<()> {
    if !review.project_trusted {
        writeln!(
            out,
            "note: {} is not trusted, so its hook files are not read (`codecoder trust`)",
            review.root.display()
        )?;
    }
    if review.hooks.is_empty() {
        writeln!(out, "no hooks configured")?;
        return Ok(());
    }
    for hook in &review.hooks {
        let state = match (hook.project, review.approved.contains(&hook.digest)) {
            (false, _) => "user    ",
            (true, true) => "approved",
            (true, false) => "pending ",
        };
        writeln!(out, "{state} {}", line(hook))?;
    }
    let pending = review.pending().len();
    if pending > 0 {
        writeln!(
            out,
            "{pending} project hook{} wait{} for review: `codecoder hooks trust` approves them",
            if pending == 1 { "" } else { "s" },
            if pending == 1 { "s" } else { "" }
        )?;
    }
    Ok(())
}
