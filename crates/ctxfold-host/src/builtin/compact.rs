//! The assistant's `compact` tool (SPEC §9, seed 000): the assistant
//! proposes compaction rules for its own conversation, naming ranges by
//! quoting text it was shown; the user approves against a preview that
//! needs nothing else on screen; what is approved is recorded with the
//! call's result and takes effect when the next turn starts.
//!
//! - Arguments: `rules`, each with `keep_first`, `keep_last` (raised to at
//!   least 1: the turn in progress is never compacted), `before_quote`,
//!   `after_quote`, `reasoning`, `tool_calls`, `summary` (plain text) and a
//!   required `note` (cut at 200 characters). Anything wrong is an error
//!   result the model can act on.
//! - Quotes resolve against the view the model was shown
//!   ([`ctxfold_core::anchor`]).
//! - The tool does not write the log: an approved call returns
//!   [`HostEffect::Compact`], which the turn loop records together with the
//!   call's result ([`ctxfold_compactor::assistant`]). A local command
//!   tool has no way to return one.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;

use ctxfold_compactor::assistant::{PlannedProposal, Proposal, plan_proposals};
use ctxfold_config::RunMode;
use ctxfold_core::anchor::{normalize, resolve_anchor};
use ctxfold_core::bounds::{Bound, Keep};
use ctxfold_core::compaction::{ReasoningPolicy, Source, ToolPolicy};
use ctxfold_core::planner::{Rule, SummaryRequest, ToolHints};
use ctxfold_core::projection::project;
use ctxfold_core::report::Fate;
use ctxfold_core::{Body, Log, Record};
use ctxfold_providers::ToolSpec;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::approval::{Decision, Presenter};
use crate::output::ToolOutput;
use crate::tools::ToolResult;

/// The tool's name, as the model calls it and `-t` / `-u` name it.
pub const NAME: &str = "compact";

/// Characters of a range's first and last words the preview shows.
const BOUNDARY_CHARS: usize = 70;

// With the output it rides on, below the turn loop that records it.
pub use crate::output::HostEffect;

/// How a call is put to the user: the run mode, the arguments, `--yes`,
/// and the presenter that shows them (see
/// [`decide_with`](crate::approval::decide_with)).
pub type Decide<'a> =
    dyn FnMut(RunMode, &Value, bool, &mut dyn Presenter) -> io::Result<Decision> + 'a;

/// The tool's description and JSON schema, for the model.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.into(),
        description: concat!(
            "Propose compaction rules for this conversation: fold older parts out of your context ",
            "(nothing is deleted; the user can undo it). The user approves each call. Approved rules ",
            "take effect when the next turn starts, so this turn is unchanged. You cannot see turn ",
            "numbers: bound a range by quoting text you were shown (before_quote: the range ends at ",
            "the turn before the one holding the quote; after_quote: it starts at the turn after) or ",
            "by counts (keep_first, keep_last). A quote must appear in exactly one turn. Each rule ",
            "needs a policy (summary, reasoning or tool_calls) and a note saying why."
        )
        .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "rules": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "keep_first": {"type": "integer", "minimum": 0, "description": "Leave this many opening turns untouched."},
                            "keep_last": {"type": "integer", "minimum": 1, "description": "Leave this many recent turns untouched (at least 1: the turn in progress)."},
                            "before_quote": {"type": "string", "description": "Verbatim text from one message: the range ends at the turn before it."},
                            "after_quote": {"type": "string", "description": "Verbatim text from one message: the range starts at the turn after it."},
                            "reasoning": {"type": "string", "enum": ["strip"], "description": "Drop reasoning in the range."},
                            "tool_calls": {"type": "string", "enum": ["strip", "strip-requests", "strip-responses", "omit"], "description": "What to do with tool calls and their results in the range."},
                            "summary": {"type": "string", "description": "Plain text that replaces the whole range: what must survive of it."},
                            "note": {"type": "string", "description": "One sentence on why (required)."}
                        },
                        "required": ["note"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["rules"],
            "additionalProperties": false
        }),
    }
}

/// One rule as the model writes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleArgs {
    keep_first: Option<u32>,
    keep_last: Option<u32>,
    before_quote: Option<String>,
    after_quote: Option<String>,
    reasoning: Option<ReasoningPolicy>,
    tool_calls: Option<ToolPolicy>,
    summary: Option<String>,
    note: Option<String>,
}

/// The arguments read and resolved: the proposals, and what was adjusted
/// on the way (said to the model and the user).
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The rules, bounds resolved.
    pub proposals: Vec<Proposal>,
    /// Adjustments, one line each (`keep_last` raised to 1, a note cut).
    pub adjusted: Vec<String>,
}

/// Read `args` and resolve its quotes against the view of `log`. The
/// error is for the model: what is wrong and how to fix it.
pub fn resolve(log: &Log, args: &Value) -> Result<Resolved, String> {
    let Some(obj) = args.as_object() else {
        return Err("the arguments must be a JSON object with `rules`, a list of rules".into());
    };
    if let Some(k) = obj.keys().find(|k| *k != "rules") {
        return Err(format!(
            "unknown argument `{k}`: the only argument is `rules`, a list of rules"
        ));
    }
    let rules = match obj.get("rules") {
        Some(Value::Array(r)) if !r.is_empty() => r,
        Some(Value::Array(_)) => return Err("`rules` is empty: propose at least one rule".into()),
        Some(_) => return Err("`rules` must be a list of rules".into()),
        None => return Err("missing `rules`: a list of rules".into()),
    };
    let view = project(log);
    let mut out = Resolved {
        proposals: Vec::new(),
        adjusted: Vec::new(),
    };
    for (k, raw) in rules.iter().enumerate() {
        let n = k + 1;
        let a: RuleArgs =
            serde_json::from_value(raw.clone()).map_err(|e| format!("rule {n}: {e}"))?;
        // One line of printable text: it is shown on the user's terminal.
        let note = printable(&normalize(a.note.as_deref().unwrap_or_default()));
        if note.is_empty() {
            return Err(format!(
                "rule {n}: `note` is required: one sentence on why this range can be folded"
            ));
        }
        if note.chars().count() > ctxfold_core::compaction::NOTE_MAX_CHARS {
            out.adjusted.push(format!(
                "rule {n}: the note was cut at {} characters",
                ctxfold_core::compaction::NOTE_MAX_CHARS
            ));
        }
        if a.summary.is_none() && a.reasoning.is_none() && a.tool_calls.is_none() {
            return Err(format!(
                "rule {n} says which turns but not what to do: give `summary`, `reasoning` or `tool_calls`"
            ));
        }
        if a.summary.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(format!(
                "rule {n}: `summary` is empty; an empty summary would erase the turns it covers"
            ));
        }
        let keep_last = match a.keep_last {
            Some(0) => {
                out.adjusted.push(format!(
                    "rule {n}: keep_last 0 was raised to 1 (the turn in progress is never compacted)"
                ));
                1
            }
            Some(k) => k,
            None => 1,
        };
        let anchor = |field: &str, quote: &str| {
            resolve_anchor(log, &view, quote, NAME).map_err(|e| format!("rule {n}, {field}: {e}"))
        };
        let to = match &a.before_quote {
            Some(q) => match anchor("before_quote", q)? {
                0 => {
                    return Err(format!(
                        "rule {n}, before_quote: the quote is in the first turn, so nothing lies before it"
                    ));
                }
                // The turn before the quoted one (0-based t - 1) is turn t, 1-based.
                t => Some(Bound::Turn(t)),
            },
            None => None,
        };
        let from = match &a.after_quote {
            // The turn after the quoted one (0-based t + 1) is turn t + 2,
            // 1-based.
            Some(q) => Some(Bound::Turn(anchor("after_quote", q)? + 2)),
            None => None,
        };
        out.proposals.push(Proposal {
            rule: Rule {
                from,
                to,
                keep_first: a.keep_first.map(Keep::Count),
                keep_last: Some(Keep::Count(keep_last)),
                // The assistant names turns; its rules fold whole turns.
                keep_steps: None,
                reasoning: a.reasoning,
                tool_calls: a.tool_calls,
                summary: a.summary.map(|text| SummaryRequest::Supplied {
                    text: text.trim().to_owned(),
                    author: Source::Assistant,
                }),
                // The default: the assistant's tool has no such argument.
                keep_diagnostics: None,
            },
            note,
        });
    }
    Ok(out)
}

/// The `compact` tool for one conversation.
pub struct CompactTool {
    /// When it runs: `ask` unless `[tools.compact] run` says otherwise.
    pub run: RunMode,
    /// Approve without asking (`--yes`).
    pub yes: bool,
    /// Per-tool hints baked into tool policies (`[tools.NAME] compaction`).
    pub hints: ToolHints,
    /// The conversation's id, in the preview files' names.
    pub conversation: String,
    /// Where preview files go (the system's temporary folder by default).
    pub preview_dir: PathBuf,
}

impl CompactTool {
    /// The tool for conversation `id`, asking before it records.
    pub fn new(id: &str, hints: ToolHints) -> Self {
        CompactTool {
            run: RunMode::Ask,
            yes: false,
            hints,
            conversation: id.to_owned(),
            preview_dir: std::env::temp_dir(),
        }
    }

    /// Handle one call with `args` against `log` (the conversation as it
    /// stands: the view the model was shown, plus the call itself).
    /// `decide` asks the user, showing the call through the presenter it
    /// is given (see [`crate::approval::decide_with`]).
    pub fn call(&self, log: &Log, args: &Value, decide: &mut Decide<'_>) -> ToolOutput {
        // A call that cannot be recorded goes back to the model at once: no
        // one is asked to approve something that cannot run.
        let first = match self.plan(log, args) {
            Ok(p) => p,
            Err(e) => return error(e),
        };
        let planned = &first.1;
        if planned.iter().all(|p| p.compaction.is_none()) {
            let why: Vec<String> = planned
                .iter()
                .enumerate()
                .filter_map(|(k, p)| Some(format!("rule {}: {}", k + 1, p.skipped.as_ref()?)))
                .collect();
            return error(format!("nothing to compact: {}", why.join("; ")));
        }
        let mut presenter = Preview {
            tool: self,
            log,
            files: Vec::new(),
            last: Some((args.clone(), first)),
        };
        let decision = decide(self.run, args, self.yes, &mut presenter);
        let approved = match decision {
            Ok(Decision::Run(a)) => a,
            Ok(Decision::Decline { reason }) => {
                presenter.remove_files();
                return error(ToolResult::declined(reason.as_deref()).content);
            }
            Err(e) => {
                presenter.remove_files();
                let why = format!("the terminal could not be read: {e}");
                return error(ToolResult::declined(Some(&why)).content);
            }
        };
        // What was approved is what was last shown (planning is the costly
        // part at a million events: once per version of the rules).
        let (resolved, planned) = match presenter.planned(&approved) {
            Ok(p) => p,
            Err(e) => return error(e),
        };
        let asked = !(self.yes || self.run == RunMode::Unattended);
        let mut content = String::from(if asked {
            "Approved by the user. Recorded, in effect from the next turn (this turn's context is unchanged):"
        } else {
            "Recorded without asking (the user approves every call), in effect from the next turn (this turn's context is unchanged):"
        });
        for (k, p) in planned.iter().enumerate() {
            let _ = write!(content, "\n- rule {}: ", k + 1);
            match (&p.compaction, &p.skipped) {
                (Some(c), _) => {
                    let _ = write!(
                        content,
                        "turns {}: {}, ~{} tokens smaller",
                        turns(c.from_turn, c.to_turn),
                        p.effect.describe(c).join(", "),
                        p.saving()
                    );
                }
                (None, Some(why)) => {
                    let _ = write!(content, "nothing recorded ({why})");
                }
                (None, None) => {}
            }
        }
        for a in &resolved.adjusted {
            let _ = write!(content, "\n- note: {a}");
        }
        if approved != *args {
            content.push_str(
                "\nThe user edited your rules before approving them; the rules above are theirs.",
            );
        }
        let approved = planned.into_iter().filter_map(|p| p.compaction).collect();
        ToolOutput {
            content,
            is_error: false,
            effects: vec![HostEffect::Compact {
                proposals: resolved.proposals,
                approved,
            }],
        }
    }

    fn plan(&self, log: &Log, args: &Value) -> Result<Plan, String> {
        let resolved = resolve(log, args)?;
        let planned = plan_proposals(
            log,
            &resolved.proposals,
            &self.hints,
            Some(jiff::Timestamp::now()),
        )
        .map_err(|e| e.0)?;
        Ok((resolved, planned))
    }
}

fn error(content: String) -> ToolOutput {
    ToolOutput {
        content,
        is_error: true,
        effects: Vec::new(),
    }
}

fn turns(a: u32, b: u32) -> String {
    if a == b {
        format!("{}", a + 1)
    } else {
        format!("{}–{}", a + 1, b + 1)
    }
}

/// The preview the approval prompt shows: per rule, the resolved turns,
/// the range's first and last words, the policy or the summary's length,
/// the note, the estimated saving, and a file holding everything it would
/// fold away.
struct Preview<'a> {
    tool: &'a CompactTool,
    log: &'a Log,
    /// The files of the preview last shown.
    files: Vec<PathBuf>,
    /// The arguments last planned, and their plan.
    last: Option<(Value, Plan)>,
}

/// Arguments read and planned.
type Plan = (Resolved, Vec<PlannedProposal>);

impl Presenter for Preview<'_> {
    fn always_ask(&self) -> bool {
        // Never recorded unseen, `run = "edit"` included.
        true
    }

    fn present(&mut self, args: &Value, out: &mut dyn Write) -> io::Result<bool> {
        // A new preview (after an edit) replaces the last one's files.
        self.remove_files();
        let (resolved, planned) = match self.planned(args) {
            Ok(p) => p,
            Err(e) => {
                writeln!(out, "compact — these rules cannot be recorded: {e}")?;
                return Ok(false);
            }
        };
        let n = planned.len();
        writeln!(
            out,
            "\ncompact — {n} rule{} proposed, in effect from the next turn\n",
            if n == 1 { "" } else { "s" }
        )?;
        for (k, p) in planned.iter().enumerate() {
            let Some(c) = &p.compaction else {
                writeln!(
                    out,
                    "  {}. nothing to do: {}",
                    k + 1,
                    p.skipped.as_deref().unwrap_or("")
                )?;
                continue;
            };
            let what = match &c.summary {
                Some(s) => format!(
                    "the assistant's summary ({} words)",
                    s.text.split_whitespace().count()
                ),
                None => c.describe().join(", "),
            };
            writeln!(
                out,
                "  {}. turns {} → {what}, ~{} tokens smaller",
                k + 1,
                turns(c.from_turn, c.to_turn),
                p.saving()
            )?;
            writeln!(out, "     does  {}", p.effect.describe(c).join(", "))?;
            if let Some((lo, hi)) = p.range {
                let (first, last) = boundaries(self.log, lo, hi);
                writeln!(out, "     from  \"{first}\"")?;
                writeln!(out, "     to    \"{last}\"")?;
            }
            writeln!(out, "     why   {}", c.note.as_deref().unwrap_or_default())?;
            match self.spill(k + 1, c, p) {
                Ok(path) => writeln!(out, "     folded away, in full: {path}")?,
                Err(e) => writeln!(out, "     (the preview file could not be written: {e})")?,
            }
        }
        for a in &resolved.adjusted {
            writeln!(out, "  note: {a}")?;
        }
        writeln!(out)?;
        Ok(true)
    }
}

impl Preview<'_> {
    /// The plan of `args`: the last one when they are the same.
    fn planned(&mut self, args: &Value) -> Result<Plan, String> {
        if let Some((a, p)) = &self.last
            && a == args
        {
            return Ok(p.clone());
        }
        let p = self.tool.plan(self.log, args)?;
        self.last = Some((args.clone(), p.clone()));
        Ok(p)
    }

    /// Remove the files of the preview last shown (declined, or replaced
    /// by a new preview).
    fn remove_files(&mut self) {
        for f in self.files.drain(..) {
            let _ = std::fs::remove_file(f);
        }
    }

    /// Write everything rule `n` folds away to a file; its path.
    fn spill(
        &mut self,
        n: usize,
        c: &ctxfold_core::Compaction,
        p: &PlannedProposal,
    ) -> io::Result<String> {
        let mut text = format!(
            "# What compaction rule {n} would fold out of the model's view\n\n\
             Conversation {}, turns {}, proposed by the assistant.\n\
             Why: {}\n\
             Nothing is deleted: the log keeps every event, and the compaction can be undone\n\
             (`ctxfold conversation compact --reset`).\n",
            self.tool.conversation,
            turns(c.from_turn, c.to_turn),
            c.note.as_deref().unwrap_or("")
        );
        if let Some(s) = &c.summary {
            let _ = write!(
                text,
                "\n## In its place, the assistant's summary\n\n{}\n",
                s.text
            );
        }
        let _ = write!(text, "\n## Folded away ({} events)\n", p.changed.len());
        for &(i, fate) in &p.changed {
            let r = &self.log.records()[i];
            let fate = match fate {
                Fate::Summarized { .. } => "replaced by the summary",
                Fate::ReasoningStripped { .. } => "reasoning stripped",
                Fate::Omitted { .. } => "omitted",
                Fate::Stripped => "stripped",
                Fate::Clipped => "cut to its head and tail",
                Fate::Unpaired => "dropped with its partner",
                Fate::Hidden | Fate::Kept => "changed",
            };
            let _ = write!(
                text,
                "\n### turn {}, {} ({fate})\n\n{}\n",
                self.log.turn_of(i) + 1,
                kind(r),
                full_text(r)
            );
        }
        let mut file = tempfile::Builder::new()
            .prefix(&format!("ctxfold-{}-compact-{n}-", self.tool.conversation))
            .suffix(".md")
            .tempfile_in(&self.tool.preview_dir)?;
        file.write_all(text.as_bytes())?;
        // Kept after the prompt: the user may open it after answering.
        let (_, path) = file.keep().map_err(|e| e.error)?;
        let shown = path.display().to_string();
        self.files.push(path);
        Ok(shown)
    }
}

fn kind(r: &Record) -> String {
    match &r.body {
        Body::User { .. } => "user".into(),
        Body::Assistant { .. } => "assistant".into(),
        Body::Reasoning { .. } => "reasoning".into(),
        Body::ToolCall { name, .. } => format!("tool call {name}"),
        Body::ToolResult { is_error, .. } => {
            if *is_error {
                "tool result (error)".into()
            } else {
                "tool result".into()
            }
        }
        Body::System { .. } => "system".into(),
        other => format!("{:?}", other.kind()),
    }
}

fn full_text(r: &Record) -> String {
    match &r.body {
        Body::User { content, .. }
        | Body::Assistant { content }
        | Body::Reasoning { content }
        | Body::System { content }
        | Body::ToolResult { content, .. } => content.clone(),
        Body::ToolCall { arguments, .. } => {
            serde_json::to_string_pretty(arguments).unwrap_or_else(|_| arguments.to_string())
        }
        _ => String::new(),
    }
}

/// The first words of the range's first model-visible record and the last
/// words of its last, whitespace collapsed.
fn boundaries(log: &Log, lo: usize, hi: usize) -> (String, String) {
    let texts: Vec<String> = log.records()[lo..=hi]
        .iter()
        .filter(|r| r.body.is_model_visible())
        .map(|r| printable(&normalize(&full_text(r))))
        .filter(|t| !t.is_empty())
        .collect();
    let first = texts.first().map(|t| {
        let head: String = t.chars().take(BOUNDARY_CHARS).collect();
        if head.len() < t.len() {
            format!("{head}…")
        } else {
            head
        }
    });
    let last = texts.last().map(|t| {
        let n = t.chars().count();
        let tail: String = t.chars().skip(n.saturating_sub(BOUNDARY_CHARS)).collect();
        if n > BOUNDARY_CHARS {
            format!("…{tail}")
        } else {
            tail
        }
    });
    (first.unwrap_or_default(), last.unwrap_or_default())
}

/// `s` with every control character (terminal escapes) replaced by `�`:
/// what the model wrote never drives the user's terminal.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
        .collect()
}
