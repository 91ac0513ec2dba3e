//! The summarizers a command may use: the offline digest, or a model as
//! `provider/model` with a progress bar on a terminal. `compact`,
//! `conversation compact`, `fork`, automatic compaction, `query` and the
//! proxy all summarize through [`CliSummarizers`].

use anyhow::Context as _;
use ctxfold_core::digest::Digest;
use ctxfold_core::summarizer::Summarizer;

use crate::progress;
use crate::settings::Settings;

/// The summarizer a rule names: the offline digest (`digest`, or no model),
/// or a model as `provider/model`, with a progress bar on a terminal.
fn summarizer_for(model: Option<&str>, settings: &Settings) -> anyhow::Result<Box<dyn Summarizer>> {
    match model {
        None | Some("digest") => Ok(Box::new(Digest)),
        Some(m) => {
            let (provider, model) = settings
                .providers
                .resolve(m)
                .with_context(|| format!("summarizer `{m}`"))?;
            // Hidden when standard error is not a terminal; cleared when
            // the summarizer is dropped, failed or not.
            let bar = progress::calls(format!("summarizing with {m}"));
            let progress = move |done: usize, planned: usize| bar.set(done, planned);
            Ok(Box::new(
                ctxfold_providers::ModelSummarizer::new(provider, model)
                    .with_progress(Box::new(progress)),
            ))
        }
    }
}

/// The summarizers a command may use: the offline digest, or a model as
/// `provider/model` with a progress bar on a terminal.
pub struct CliSummarizers(Settings);

impl CliSummarizers {
    /// With the providers of `settings`.
    pub fn new(settings: Settings) -> Self {
        CliSummarizers(settings)
    }
}

impl ctxfold_compactor::Summarizers for CliSummarizers {
    fn get(&self, model: Option<&str>) -> Result<Box<dyn Summarizer>, String> {
        summarizer_for(model, &self.0).map_err(|e| format!("{e:#}"))
    }
}
