//! The `ctxfold` command.

// Standard output and error go through `render`, which never panics on a
// stream that cannot be written.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod auto;
mod cli;
mod compact;
mod compacting;
mod conversation;
mod listing;
mod outputs;
mod progress;
mod proxy;
mod query;
mod render;
mod rules;
mod settings;
mod shutdown;
mod stats;
mod statuses;
mod store;
mod summarizers;
mod timeline;
mod ui;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    #[cfg(unix)]
    {
        // The binary doubles as the reaper of `query`'s tool processes.
        let mut args = std::env::args_os().skip(1);
        if args.next().as_deref() == Some(std::ffi::OsStr::new(ctxfold_host::reaper::ARG)) {
            ctxfold_host::reaper::run(args);
        }
        if let Ok(me) = std::env::current_exe() {
            ctxfold_host::reaper::install(me);
        }
    }
    let cli = Cli::parse();
    logging(cli.verbose);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that stopped reading (`print | head`) is no error of
        // ours: stop quietly, as other command-line tools do.
        Err(e) if e.is::<render::StdoutClosed>() => ExitCode::SUCCESS,
        Err(e) => {
            crate::render::say!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Log records (`tracing`) go to standard error: warnings by default, what
/// automatic compaction does with -v, why it did not with -vv; `RUST_LOG`
/// (e.g. `ctxfold_compactor=debug`) overrides.
fn logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .without_time()
        .try_init();
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let out = render::Printer::new(cli.format);
    let cwd = std::env::current_dir()?;
    // Config layers: the workspace's file when there is a workspace here.
    let ws_root = ctxfold_store::Workspace::discover(&cwd).map(|w| w.root().to_owned());
    match cli.command {
        Command::Init => conversation::init(&out),
        Command::Compact(args) => {
            let settings = settings::load(ws_root, &cli.config)?;
            compact::compact_file(&args, &settings, &out)
        }
        Command::Config(cli::ConfigCommand::Show) => settings::show(ws_root, &cli.config, &out),
        Command::Stats { id, model } => {
            let settings = settings::load(ws_root, &cli.config)?;
            let target = store::select(cli.store.as_deref(), &settings, &cwd)?;
            stats::stats(&target, id.as_deref(), model.as_deref(), &settings, &out)
        }
        Command::Query(args) => {
            let settings = settings::load(ws_root, &cli.config)?;
            let target = store::select(cli.store.as_deref(), &settings, &cwd)?;
            query::query(&target, &args, &settings, &out)
        }
        Command::Conversation(cmd) => {
            let settings = settings::load(ws_root, &cli.config)?;
            let target = store::select(cli.store.as_deref(), &settings, &cwd)?;
            conversation::run(cmd, &target, &settings, &out)
        }
        Command::Store(cli::StoreCommand::Copy { from, to, ids }) => {
            store::copy(&from, &to, &ids, &out)
        }
        Command::Store(cli::StoreCommand::Migrate { url }) => {
            let settings = settings::load(ws_root, &cli.config)?;
            let selected = store::selected_spec(cli.store.as_deref(), &settings);
            store::migrate(url.as_deref(), selected.as_deref(), &out)
        }
        Command::Proxy(args) => {
            let settings = settings::load(ws_root, &cli.config)?;
            let target = store::select(cli.store.as_deref(), &settings, &cwd)?;
            proxy::proxy(target, &args, settings)
        }
        Command::Ui(args) => {
            let settings = settings::load(ws_root, &cli.config)?;
            let target = store::select(cli.store.as_deref(), &settings, &cwd)?;
            ui::ui(target, &args, &settings)
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "ctxfold", &mut script);
            render::to_stdout(&script)
        }
    }
}
