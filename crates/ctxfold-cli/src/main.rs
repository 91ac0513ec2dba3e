//! The `ctxfold` command.

mod cli;
mod conversation;
mod render;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let out = render::Printer::new(cli.format);
    match cli.command {
        Command::Init => conversation::init(&out),
        Command::Conversation(cmd) => conversation::run(cmd, &out),
    }
}
