//! `ctxfold completions SHELL`: the shell's completion script.

use crate::cli::{Cli, CompletionsArgs};
use crate::context::Context;
use crate::render::Raw;

/// The script, printed as it is whatever the format.
pub fn run(_ctx: &Context, args: CompletionsArgs) -> anyhow::Result<Raw> {
    let mut script = Vec::new();
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(args.shell, &mut cmd, "ctxfold", &mut script);
    Ok(Raw {
        stdout: script,
        stderr: String::new(),
    })
}
