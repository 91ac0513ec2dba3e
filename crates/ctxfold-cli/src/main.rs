//! The `ctxfold` command.

// Standard output and error go through `render`, which never panics on a
// stream that cannot be written.
#![deny(clippy::print_stdout, clippy::print_stderr)]
// The argument structs' doc comments are the --help text, where
// `[:port]` and `[store]` are literal brackets, not links.
#![allow(rustdoc::broken_intra_doc_links)]

mod agents;
mod allocator;
mod auto;
mod cli;
mod commands;
mod compacting;
mod context;
mod cost;
mod listing;
mod metrics_text;
mod progress;
mod render;
mod rules;
mod serving;
mod settings;
mod shutdown;
mod snapshot_later;
mod store;
mod summarizers;
mod timeline;
mod transcript;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, ConfigCommand, ConversationCommand, StoreCommand};
use context::Context;

fn main() -> ExitCode {
    #[cfg(unix)]
    {
        // The binary doubles as the reaper of `query`'s tool processes.
        let mut args = std::env::args_os().skip(1);
        match args.next() {
            Some(a) if a == ctxfold_host::reaper::ARG => ctxfold_host::reaper::run(args),
            Some(a) if a == snapshot_later::ARG => {
                allocator::purge_sooner();
                snapshot_later::run(args)
            }
            _ => {}
        }
        if let Ok(me) = std::env::current_exe() {
            ctxfold_host::reaper::install(me);
        }
    }
    let cli = Cli::parse();
    let serves = matches!(
        cli.command,
        Command::Proxy(_) | Command::Ui(_) | Command::Mcp(_) | Command::Run(_) | Command::Query(_)
    );
    if !serves {
        allocator::purge_sooner();
    }
    // `run`'s agent owns the terminal: the proxy's log goes to a file.
    let log_file = matches!(cli.command, Command::Run(_)).then(commands::run::log_path);
    logging(cli.verbose, log_file.as_deref());
    let done = run(cli);
    snapshot_later::start_writer();
    match done {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that stopped reading (`print | head`) is no error of
        // ours: stop quietly, as other command-line tools do.
        Err(e) if e.is::<render::StdoutClosed>() => ExitCode::SUCCESS,
        // `run`: the agent's own status, after its closing lines.
        Err(e) if e.is::<commands::run::AgentExit>() => ExitCode::from(
            e.downcast_ref::<commands::run::AgentExit>()
                .map_or(1, |x| x.0),
        ),
        Err(e) => {
            crate::render::say!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Log records (`tracing`) go to standard error: warnings by default, what
/// automatic compaction does with -v, why it did not with -vv; `RUST_LOG`
/// (e.g. `ctxfold_compactor=debug`) overrides.
fn logging(verbose: u8, file: Option<&std::path::Path>) {
    use tracing_subscriber::EnvFilter;
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let opened = file.and_then(|p| std::fs::File::create(p).ok());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // A record that cannot be written (a full disk, a closed pipe) is
        // lost, as `say!`'s are; reporting that with `eprintln!` panicked.
        .log_internal_errors(false)
        .with_target(false)
        .without_time();
    let _ = match opened {
        Some(f) => builder
            .with_writer(std::sync::Mutex::new(f))
            .with_ansi(false)
            .try_init(),
        None => builder
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
    };
}

/// Dispatch: each command runs over the context, and its report is
/// printed (`query`, `proxy`, `ui` and `mcp` print as they go).
fn run(cli: Cli) -> anyhow::Result<()> {
    use commands::conversation as c;
    use commands::{
        compact, completions, config, init, mcp, proxy, query, recall, run as run_agent, search,
        stats, store, ui,
    };
    let ctx = Context::new(&cli)?;
    let out = &ctx.printer;
    match cli.command {
        Command::Init => out.print(&init::run(&ctx)?),
        Command::Compact(args) => out.print(&compact::run(&ctx, *args)?),
        Command::Config(ConfigCommand::Show) => out.print(&config::show(&ctx)?),
        Command::Doctor => out.print(&commands::doctor::run(&ctx)?),
        Command::Stats(args) => out.print(&stats::run(&ctx, args)?),
        Command::Query(args) => query::run(&ctx, *args),
        Command::Conversation(cmd) => match cmd {
            ConversationCommand::Ls => out.print(&c::ls::run(&ctx)?),
            ConversationCommand::Show(args) => out.print(&c::show::run(&ctx, args)?),
            ConversationCommand::Print(args) => out.print(&c::print::run(&ctx, args)?),
            ConversationCommand::Compact(args) => out.print(&c::compact::run(&ctx, args)?),
            ConversationCommand::Fork(args) => out.print(&c::fork::run(&ctx, args)?),
            ConversationCommand::Import(args) => out.print(&c::import::run(&ctx, args)?),
            ConversationCommand::Export(args) => out.print(&c::export::run(&ctx, args)?),
            ConversationCommand::Append(args) => out.print(&c::append::run(&ctx, args)?),
            ConversationCommand::Use(args) => out.print(&c::use_::run(&ctx, args)?),
            ConversationCommand::Rm(args) => out.print(&c::rm::run(&ctx, args)?),
        },
        Command::Store(StoreCommand::Copy(args)) => out.print(&store::copy::run(&ctx, args)?),
        Command::Store(StoreCommand::Migrate(args)) => out.print(&store::migrate::run(&ctx, args)?),
        Command::Proxy(args) => proxy::run(&ctx, args),
        Command::Ui(args) => ui::run(&ctx, args),
        Command::Recall(args) => out.print(&recall::run(&ctx, args)?),
        Command::Search(args) => out.print(&search::run(&ctx, args)?),
        Command::Mcp(args) => mcp::run(&ctx, args),
        Command::Run(args) => run_agent::run(&ctx, args),
        Command::Completions(args) => out.print(&completions::run(&ctx, args)?),
    }
}
