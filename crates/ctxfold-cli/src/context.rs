//! What every command runs with: the printer (the output format), the
//! current directory, the config layers and the settings they make, and
//! the store the command works on.

use std::cell::OnceCell;
use std::path::PathBuf;

use crate::cli::Cli;
use crate::render::Printer;
use crate::settings::{self, Settings};
use crate::store::{self, Target};

/// A command's surroundings. Settings are loaded when a command first
/// asks (`init`, `store copy` and `completions` run without them, so a
/// broken config does not stop them).
pub struct Context {
    /// Prints the command's report in the format asked for.
    pub printer: Printer,
    /// Where the command runs.
    pub cwd: PathBuf,
    /// The workspace found from `cwd`, whose config is a layer.
    pub workspace_root: Option<PathBuf>,
    /// `-c` files.
    pub config: Vec<PathBuf>,
    /// `--store`.
    pub store: Option<String>,
    settings: OnceCell<Settings>,
}

impl Context {
    /// From the global flags, in the current directory.
    pub fn new(cli: &Cli) -> anyhow::Result<Context> {
        let cwd = std::env::current_dir()?;
        // Config layers: the workspace's file when there is a workspace here.
        let workspace_root = ctxfold_store::Workspace::discover(&cwd).map(|w| w.root().to_owned());
        Ok(Context {
            printer: Printer::new(cli.format),
            cwd,
            workspace_root,
            config: cli.config.clone(),
            store: cli.store.clone(),
            settings: OnceCell::new(),
        })
    }

    /// The settings (built-in < user < workspace < `-c` < environment).
    pub fn settings(&self) -> anyhow::Result<&Settings> {
        if let Some(s) = self.settings.get() {
            return Ok(s);
        }
        let loaded = settings::load(self.workspace_root.clone(), &self.config)?;
        Ok(self.settings.get_or_init(|| loaded))
    }

    /// The store the command works on (`--store`, `CTXFOLD_STORE`,
    /// `[store] url`, else the workspace here), after the settings.
    pub fn target(&self) -> anyhow::Result<Target> {
        let settings = self.settings()?;
        store::select(self.store.as_deref(), settings, &self.cwd)
    }
}
