//! The model summarizer: a [`Summarizer`] that sends the raw events of a
//! range to a model (SPEC §6).
//!
//! It reads the raw range only (never a projected view). When the range
//! does not fit the model's window it still succeeds: first the bulk of long
//! tool results is cut (`method: "pruned"`), then, if that is not enough,
//! the range is summarized in chunks that each fit and the chunk summaries
//! are combined (`method: "chunked, N parts"`), in rounds when they do not
//! fit one call together. A single step larger than the window is cut to
//! fit (every block, then the text). A context overflow reported by the
//! provider (the estimate was off) halves the budget and tries again, at
//! most twice. A failure returns an error and records nothing.

use ctxfold_core::compaction::Provenance;
use ctxfold_core::summarizer::{SummarizeError, Summarizer, SummaryInput, SummaryOutput};
use ctxfold_core::summary_prompt::{
    COMBINE_INSTRUCTIONS, DEFAULT_INSTRUCTIONS, Prune, chunks, fit, render_range, render_within,
};

use crate::error::ProviderError;
use crate::part::Part;
use crate::provider::Provider;
use crate::request::{ChatRequest, Role};

/// Characters per token assumed when fitting text into a window. Lower
/// than the usual 4 so that code and JSON, which tokenize densely, fit.
const CHARS_PER_TOKEN: usize = 3;

/// Window assumed when neither the provider nor the built-in table knows
/// the model's.
pub const ASSUMED_WINDOW: u32 = 8192;

/// Reports progress: (calls done, calls planned).
pub type Progress<'a> = dyn Fn(usize, usize) + 'a;

/// Summarizes with a model through a [`Provider`].
pub struct ModelSummarizer<'a> {
    provider: Provider,
    model: String,
    instructions: Option<String>,
    max_tokens: Option<u32>,
    window: Option<u32>,
    progress: Option<Box<Progress<'a>>>,
}

impl<'a> ModelSummarizer<'a> {
    /// A summarizer using `model` (as the provider names it) at `provider`.
    pub fn new(provider: Provider, model: impl Into<String>) -> Self {
        ModelSummarizer {
            provider,
            model: model.into(),
            instructions: None,
            max_tokens: None,
            window: None,
            progress: None,
        }
    }

    /// Instructions to use instead of [`DEFAULT_INSTRUCTIONS`] (a rule's or
    /// the command line's).
    pub fn with_instructions(mut self, instructions: Option<String>) -> Self {
        self.instructions = instructions;
        self
    }

    /// The longest summary to ask for, in tokens (default: the provider's
    /// configured `max_tokens`, else a quarter of the window, at most 2048).
    pub fn with_max_tokens(mut self, max_tokens: Option<u32>) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The model's window, when known better than the provider says (config).
    pub fn with_window(mut self, window: Option<u32>) -> Self {
        self.window = window;
        self
    }

    /// Called after each model call with (done, planned).
    pub fn with_progress(mut self, progress: Box<Progress<'a>>) -> Self {
        self.progress = Some(progress);
        self
    }

    fn fail(&self, message: impl Into<String>) -> SummarizeError {
        SummarizeError {
            summarizer: self.name(),
            message: message.into(),
        }
    }

    fn call(
        &self,
        instructions: &str,
        text: &str,
        max_tokens: u32,
    ) -> Result<String, ProviderError> {
        let mut req = ChatRequest::new(&self.model);
        req.push_system(instructions);
        req.push(
            Role::User,
            Part::Text(format!(
                "<conversation-excerpt>\n{text}</conversation-excerpt>\n\nSummarize the excerpt above as instructed."
            )),
        );
        req.max_tokens = Some(max_tokens);
        let resp = self.provider.chat(&req, None)?;
        // The summary is stored: no key in it, whatever the model wrote.
        Ok(self.provider.redact(resp.text().trim()))
    }

    /// Summarize with a text budget of `budget_chars`: whole, pruned, or in
    /// chunks. Returns the text and the method used.
    fn summarize_within(
        &self,
        input: &SummaryInput<'_>,
        instructions: &str,
        budget_chars: usize,
        max_tokens: u32,
    ) -> Result<(String, Option<String>), ProviderError> {
        let report = |done, planned| {
            if let Some(p) = &self.progress {
                p(done, planned);
            }
        };
        let prune = Prune::default();
        let pruned = render_range(input.log, input.range, Some(prune));
        let parts = if pruned.chars().count() <= budget_chars {
            vec![input.range]
        } else {
            chunks(input.log, input.range, budget_chars, prune)
        };
        if parts.len() <= 1 {
            // One call: the whole range, or as much of it as has to be cut.
            let (text, cut) = render_within(input.log, input.range, budget_chars);
            report(0, 1);
            let summary = self.call(instructions, &text, max_tokens)?;
            report(1, 1);
            return Ok((summary, cut.then(|| "pruned".to_owned())));
        }
        // One call per chunk, then combine, in rounds if the chunk
        // summaries do not fit one call together.
        let mut planned = parts.len() + 1;
        let mut done = 0;
        let mut summaries = Vec::with_capacity(parts.len());
        for part in &parts {
            report(done, planned);
            let (text, _) = render_within(input.log, *part, budget_chars);
            summaries.push(self.call(instructions, &text, max_tokens)?);
            done += 1;
        }
        let combine = format!(
            "{COMBINE_INSTRUCTIONS}\n\nThe combined summary must also follow these instructions:\n{instructions}"
        );
        let mut rounds = 0;
        while summaries.len() > 1 {
            let groups = group_to_fit(&summaries, budget_chars);
            // No progress (every summary alone is too big): cut them to fit
            // in one last call rather than loop.
            let groups = if groups.len() == summaries.len() || rounds >= 4 {
                vec![summaries.clone()]
            } else {
                groups
            };
            planned = done + groups.len();
            let mut next = Vec::with_capacity(groups.len());
            for group in &groups {
                report(done, planned);
                let joined: String = group
                    .iter()
                    .enumerate()
                    .map(|(i, s)| format!("--- Part {} of {} ---\n{s}\n", i + 1, group.len()))
                    .collect();
                next.push(self.call(&combine, &fit(&joined, budget_chars), max_tokens)?);
                done += 1;
            }
            summaries = next;
            rounds += 1;
        }
        report(done, done);
        let text = summaries.pop().unwrap_or_default();
        Ok((text, Some(format!("chunked, {} parts", parts.len()))))
    }
}

/// Consecutive summaries grouped so that each group, joined, fits `budget`.
fn group_to_fit(summaries: &[String], budget: usize) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut used = 0;
    for s in summaries {
        let n = s.chars().count() + 32;
        match groups.last_mut() {
            Some(g) if used + n <= budget => {
                g.push(s.clone());
                used += n;
            }
            _ => {
                groups.push(vec![s.clone()]);
                used = n;
            }
        }
    }
    groups
}

impl Summarizer for ModelSummarizer<'_> {
    fn name(&self) -> String {
        format!("{}/{}", self.provider.name(), self.model)
    }

    fn summarize(&self, input: SummaryInput<'_>) -> Result<SummaryOutput, SummarizeError> {
        let instructions = input
            .instructions
            .map(str::to_owned)
            .or_else(|| self.instructions.clone())
            .unwrap_or_else(|| DEFAULT_INSTRUCTIONS.to_owned());
        let window = match self.window {
            Some(w) => w,
            None => self
                .provider
                .context_window(&self.model)
                .map_err(|e| self.fail(e.to_string()))?
                .unwrap_or(ASSUMED_WINDOW),
        } as usize;
        let max_tokens = self
            .max_tokens
            .or(self.provider.config().max_tokens)
            .map_or((window / 4).min(2048), |m| m as usize)
            .max(64);
        let overhead = instructions.len() / CHARS_PER_TOKEN + 64;
        let Some(budget_tokens) = window
            .checked_sub(max_tokens + overhead)
            .filter(|b| *b > 256)
        else {
            return Err(self.fail(format!(
                "its window of {window} tokens leaves no room for a range after the instructions and a {max_tokens}-token answer"
            )));
        };
        let mut budget = budget_tokens * CHARS_PER_TOKEN;
        let mut attempts = 0;
        loop {
            match self.summarize_within(&input, &instructions, budget, max_tokens as u32) {
                Ok((text, method)) => {
                    if text.is_empty() {
                        return Err(self.fail("the model answered with an empty summary"));
                    }
                    return Ok(SummaryOutput {
                        text,
                        provenance: Provenance::Derived {
                            summarizer: self.name(),
                            version: None,
                            instructions: Some(instructions),
                            method,
                        },
                    });
                }
                Err(e) if e.is_context_overflow() && attempts < 2 => {
                    attempts += 1;
                    budget /= 2;
                }
                Err(e) => return Err(self.fail(e.to_string())),
            }
        }
    }
}
