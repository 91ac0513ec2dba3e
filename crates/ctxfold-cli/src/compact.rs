//! Compaction commands: `ctxfold compact FILE`, `conversation compact`,
//! `conversation print --compacted`, `conversation fork`, and the timeline
//! they print.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use ctxfold_core::bounds::{Bound, Keep};
use ctxfold_core::compaction::{AllMarker, CompactionReset, ReasoningPolicy, ResetTargets, Source};
use ctxfold_core::digest::Digest;
use ctxfold_core::estimate::{raw_tokens, view_tokens};
use ctxfold_core::planner::{Plan, PlanContext, Rule, SummaryRequest, plan};
use ctxfold_core::projection::{Inactive, Item, project};
use ctxfold_core::report::{timeline, turn_reports};
use ctxfold_core::summarizer::{Summarizer, SummaryInput};
use ctxfold_core::{Body, Compaction, Log, Object, Record, dsl};
use ctxfold_formats::{Format, Transcript};
use ctxfold_store::Workspace;
use serde_json::{Value, json};

use crate::cli::{CompactFileArgs, RuleFlags};
use crate::render::{self, Printer};
use crate::settings::Settings;

/// The rules a command's flags ask for (SPEC §5, §11):
/// - `-r`, `-t`, `-s` with the range flags make one rule; range flags alone
///   use the built-in policies (strip reasoning and tools), and policy flags
///   alone the configured keep (`keep_first`/`keep_last` of the first
///   configured rule that has each), else the built-in one (keep the first
///   turn and the last three);
/// - each `-k SPEC` adds one rule; a bare `-k` adds the configured rules;
/// - nothing at all applies the configured rules (or the built-in one).
pub fn rules_from_flags(flags: &RuleFlags, settings: &Settings) -> anyhow::Result<Vec<Rule>> {
    let mut rules = Vec::new();
    let has_range = flags.from.is_some()
        || flags.to.is_some()
        || flags.keep_first.is_some()
        || flags.keep_last.is_some();
    let has_policy =
        flags.reasoning || flags.tools.is_some() || flags.summarize || flags.summary_text.is_some();
    if has_policy || has_range {
        let mut rule = Rule::default();
        if has_policy {
            rule.reasoning = flags.reasoning.then_some(ReasoningPolicy::Strip);
            if let Some(mode) = &flags.tools {
                rule.tool_calls = Some(dsl::parse_tool_mode(mode).with_context(|| {
                    format!("--tools={mode}: expected strip, strip-requests (sreq), strip-responses (sres) or omit")
                })?);
            }
            if flags.summarize {
                rule.summary = Some(SummaryRequest::Derive {
                    model: flags.model.clone(),
                    instructions: None,
                });
            }
            if let Some(text) = &flags.summary_text {
                rule.summary = Some(SummaryRequest::Supplied {
                    text: text.clone(),
                    author: Source::User,
                });
            }
        } else {
            let builtin = Rule::builtin();
            rule.reasoning = builtin.reasoning;
            rule.tool_calls = builtin.tool_calls;
        }
        let bound = |flag: &str, v: &Option<String>| -> anyhow::Result<Option<Bound>> {
            v.as_deref()
                .map(|s| s.parse::<Bound>().with_context(|| format!("--{flag} {s}")))
                .transpose()
        };
        let keep = |flag: &str, v: &Option<String>| -> anyhow::Result<Option<Keep>> {
            v.as_deref()
                .map(|s| s.parse::<Keep>().with_context(|| format!("--{flag} {s}")))
                .transpose()
        };
        rule.from = bound("from", &flags.from)?;
        rule.to = bound("to", &flags.to)?;
        if rule.to == Some(Bound::LastCompaction) {
            bail!("--to last-compaction: `last-compaction` can only start a range");
        }
        rule.keep_first = keep("keep-first", &flags.keep_first)?;
        rule.keep_last = keep("keep-last", &flags.keep_last)?;
        if !has_range {
            // Policy flags alone keep what config keeps (each from the first
            // rule that sets it), else the built-in rule: the opening turn
            // and the latest ones stay verbatim unless a range says
            // otherwise (a bare -s must not summarize the turn in hand).
            let builtin = Rule::builtin();
            let rules = || settings.rules.iter();
            rule.keep_first = rules().find_map(|r| r.keep_first).or(builtin.keep_first);
            rule.keep_last = rules().find_map(|r| r.keep_last).or(builtin.keep_last);
        }
        rules.push(rule);
    }
    let mut bare = false;
    for spec in &flags.compact {
        if spec.is_empty() {
            bare = true;
        } else {
            rules.push(dsl::parse(spec)?);
        }
    }
    if bare || rules.is_empty() {
        rules.extend(settings.rules.iter().cloned());
    }
    // -m names the summarizer of every rule that summarizes, configured
    // ones included.
    let mut summarizes = false;
    for rule in &mut rules {
        if let Some(SummaryRequest::Derive { model, .. }) = &mut rule.summary {
            summarizes = true;
            if let Some(m) = &flags.model {
                *model = Some(m.clone());
            }
        }
    }
    if flags.model.is_some() && !summarizes {
        bail!(
            "-m/--model picks the summarizer, but no rule summarizes: add -s, or `s` to a -k spec"
        );
    }
    Ok(rules)
}

/// A progress bar that leaves nothing on the terminal when it goes.
struct ClearOnDrop(indicatif::ProgressBar);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

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
            // Hidden when standard error is not a terminal.
            let bar = indicatif::ProgressBar::new(1).with_message(format!("summarizing with {m}"));
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} {msg}: call {pos}/{len} [{elapsed}]",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            // Cleared when the summarizer is dropped, failed or not.
            let bar = ClearOnDrop(bar);
            let progress = move |done: usize, planned: usize| {
                bar.0.set_length(planned as u64);
                bar.0.set_position(done as u64);
            };
            Ok(Box::new(
                ctxfold_providers::ModelSummarizer::new(provider, model)
                    .with_progress(Box::new(progress)),
            ))
        }
    }
}

/// Plan `rules`, generate the summaries they need, and return the
/// compaction records to append with what each changes in the view. A
/// failed or too-large summary records nothing; a compaction that would
/// change nothing is left out (and said so in the plan's `skipped`).
fn make_compactions(
    log: &Log,
    rules: &[Rule],
    ctx: &PlanContext,
    settings: &Settings,
    dry_run: bool,
) -> anyhow::Result<(Plan, Vec<Compaction>, Vec<Effect>)> {
    let mut plan = plan(log, rules, ctx)?;
    let mut out = Vec::new();
    for p in &plan.planned {
        let mut c = p.compaction.clone();
        if let (Some((model, _)), true) = (&p.derive, dry_run) {
            // A preview never pays for a model call: say who would write it.
            let s = summarizer_for(model.as_deref(), settings)?;
            c.summary = Some(ctxfold_core::compaction::Summary {
                text: format!(
                    "[a summary by {}, written when this runs without --dry-run]",
                    s.name()
                ),
                provenance: ctxfold_core::compaction::Provenance::Derived {
                    summarizer: s.name(),
                    version: None,
                    instructions: None,
                    method: Some("dry run".into()),
                },
            });
            out.push(c);
            continue;
        }
        if let Some((model, instructions)) = &p.derive {
            let s = summarizer_for(model.as_deref(), settings)?;
            let summary = s.summarize(SummaryInput {
                log,
                range: p.range,
                instructions: instructions.as_deref(),
            })?;
            c.summary = Some(ctxfold_core::compaction::Summary {
                text: summary.text,
                provenance: summary.provenance,
            });
        }
        // A summary, derived or written, must say something and be smaller
        // than what it replaces (SPEC §6).
        if let Some(summary) = &c.summary
            && let Err(why) = ctxfold_core::planner::check_summary(log, p.range, &summary.text)
        {
            let by = match &summary.provenance {
                ctxfold_core::compaction::Provenance::Derived { summarizer, .. } => {
                    format!("the {summarizer} summary")
                }
                ctxfold_core::compaction::Provenance::Supplied { .. } => {
                    "the written summary".into()
                }
            };
            bail!(
                "{by} of turns {}–{} {why}; nothing was recorded",
                u64::from(c.from_turn) + 1,
                u64::from(c.to_turn) + 1
            );
        }
        out.push(c);
    }
    let effects = drop_no_ops(log, &mut plan, &mut out);
    Ok((plan, out, effects))
}

/// `log` with `compactions` appended (in memory).
fn with_compactions(log: &Log, compactions: &[Compaction], ts: &str) -> Log {
    let mut after = log.clone();
    for c in compactions {
        let seq = after.next_seq();
        after.push(Record::new(seq, ts, Body::Compaction(Box::new(c.clone()))));
    }
    after
}

/// What one new compaction changes in the view, by kind of event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
struct Effect {
    summarized: usize,
    reasoning_stripped: usize,
    stripped_calls: usize,
    stripped_results: usize,
    omitted: usize,
}

impl Effect {
    fn is_none(&self) -> bool {
        *self == Effect::default()
    }
}

/// What each of `compactions` (appended after `log`) changes in the view:
/// the events whose fate differs from the view without them, each put to
/// the compaction that decided it. Stripping is put to the latest of them
/// that covers the event with a tool policy.
fn effects(log: &Log, compactions: &[Compaction]) -> Vec<Effect> {
    use ctxfold_core::report::{Fate, fates};
    let after = with_compactions(log, compactions, "");
    let before = fates(log, &project(log));
    let now = fates(&after, &project(&after));
    let n = log.records().len();
    let ranges: Vec<Option<(usize, usize)>> = compactions
        .iter()
        .map(|c| {
            let has_tools = c.tool_calls.is_some() || !c.tool_overrides.is_empty();
            has_tools
                .then(|| ctxfold_core::projection::covered_indices(&after, c))
                .flatten()
        })
        .collect();
    let mut out = vec![Effect::default(); compactions.len()];
    let mine = |k: usize| k.checked_sub(n).filter(|j| *j < compactions.len());
    for i in 0..n {
        if before[i] == now[i] {
            continue;
        }
        match now[i] {
            Fate::Summarized { compaction } => {
                if let Some(j) = mine(compaction) {
                    out[j].summarized += 1;
                }
            }
            Fate::ReasoningStripped { compaction } => {
                if let Some(j) = mine(compaction) {
                    out[j].reasoning_stripped += 1;
                }
            }
            Fate::Omitted { compaction } => {
                if let Some(j) = mine(compaction) {
                    out[j].omitted += 1;
                }
            }
            Fate::Stripped => {
                let by = (0..compactions.len())
                    .rev()
                    .find(|&j| ranges[j].is_some_and(|(lo, hi)| lo <= i && i <= hi));
                if let Some(j) = by {
                    match log.records()[i].body {
                        Body::ToolCall { .. } => out[j].stripped_calls += 1,
                        _ => out[j].stripped_results += 1,
                    }
                }
            }
            Fate::Hidden | Fate::Kept | Fate::Unpaired => {}
        }
    }
    out
}

/// Take out of the plan every compaction that would change nothing in the
/// view (nothing in its range to strip, or already compacted the same way):
/// recording it would only say something untrue. Returns what the rest do.
fn drop_no_ops(log: &Log, plan: &mut Plan, compactions: &mut Vec<Compaction>) -> Vec<Effect> {
    let all = effects(log, compactions);
    if all.iter().all(|e| !e.is_none()) {
        return all;
    }
    let mut kept_plan = Vec::new();
    let mut kept = Vec::new();
    let mut kept_effects = Vec::new();
    for ((p, c), e) in std::mem::take(&mut plan.planned)
        .into_iter()
        .zip(std::mem::take(compactions))
        .zip(all)
    {
        if e.is_none() {
            plan.skipped.push(ctxfold_core::planner::Skipped {
                rule: p.rule,
                reason: format!(
                    "turns {}–{}: {} would change nothing in the view (nothing there to strip, or it is already compacted)",
                    u64::from(c.from_turn) + 1,
                    u64::from(c.to_turn) + 1,
                    describe_policies(&c).join(", ")
                ),
            });
        } else {
            kept_plan.push(p);
            kept.push(c);
            kept_effects.push(e);
        }
    }
    plan.planned = kept_plan;
    *compactions = kept;
    // A no-op decided nothing, so the others' effects are unchanged.
    kept_effects
}

/// What a compaction changed, in words: only what it actually did.
fn describe_effect(c: &Compaction, e: &Effect) -> Vec<String> {
    use ctxfold_core::compaction::Provenance;
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut out = Vec::new();
    if e.summarized > 0 {
        let by = match c.summary.as_ref().map(|s| &s.provenance) {
            Some(Provenance::Derived { summarizer, .. }) => format!("summary by {summarizer}"),
            Some(Provenance::Supplied { author }) => {
                format!("summary written by {}", source_name(*author))
            }
            None => "summary".into(),
        };
        out.push(format!(
            "{by} in place of {}",
            plural(e.summarized, "event", "events")
        ));
    }
    if e.reasoning_stripped > 0 {
        out.push(format!(
            "{} stripped",
            plural(e.reasoning_stripped, "reasoning block", "reasoning blocks")
        ));
    }
    match (e.stripped_calls, e.stripped_results) {
        (0, 0) => {}
        (calls, 0) => out.push(format!(
            "{} stripped",
            plural(calls, "tool request", "tool requests")
        )),
        (0, results) => out.push(format!(
            "{} stripped",
            plural(results, "tool result", "tool results")
        )),
        (calls, results) => out.push(format!(
            "{} and {} stripped",
            plural(calls, "tool request", "tool requests"),
            plural(results, "tool result", "tool results")
        )),
    }
    if e.omitted > 0 {
        out.push(format!(
            "{} omitted",
            plural(e.omitted, "tool event", "tool events")
        ));
    }
    out
}

/// Lines for what the view leaves out that no compaction decided: tool
/// calls and results without their partner, and why.
fn unpaired_lines(log: &Log, view: &ctxfold_core::projection::View<'_>) -> Vec<(Value, String)> {
    use std::collections::HashSet;
    let records = log.records();
    let mut calls = HashSet::new();
    let mut results = HashSet::new();
    for r in records {
        match &r.body {
            Body::ToolCall { id, .. } => {
                calls.insert(id.as_str());
            }
            Body::ToolResult { id, .. } => {
                results.insert(id.as_str());
            }
            _ => {}
        }
    }
    view.dropped
        .iter()
        .filter(|d| d.reason == ctxfold_core::projection::DropReason::Unpaired)
        .filter_map(|d| {
            let turn = log.turn_of(d.index) + 1;
            let (what, id, why) = match &records[d.index].body {
                Body::ToolResult { id, .. } if !calls.contains(id.as_str()) => {
                    ("a tool result", id, "the transcript has no call with that id")
                }
                Body::ToolCall { id, .. } if !results.contains(id.as_str()) => {
                    ("a tool call", id, "the transcript has no result for it")
                }
                Body::ToolResult { id, .. } => {
                    ("a tool result", id, "its call was folded into a summary")
                }
                Body::ToolCall { id, .. } => {
                    ("a tool call", id, "its result was folded into a summary")
                }
                _ => return None,
            };
            Some((
                json!({"turn": turn, "seq": records[d.index].seq, "id": id, "why": why}),
                format!(
                    "left out of turn {turn}: {what} (id `{id}`): {why}; no provider accepts one without the other"
                ),
            ))
        })
        .collect()
}

/// The timeline of what `after` (the log with new compactions) makes of
/// each turn, with sizes before and after, as text and JSON.
fn report(
    before: &Log,
    after: &Log,
    plan: &Plan,
    compactions: &[Compaction],
    effects: &[Effect],
    verb: &str,
) -> (Value, String) {
    let view_before = project(before);
    let view_after = project(after);
    let tokens_raw = raw_tokens(before.records());
    let tokens_before = view_tokens(&view_before);
    let tokens_after = view_tokens(&view_after);
    let reports = turn_reports(after, &view_after);
    let lines = timeline(&reports);
    let mut text = String::new();
    let pct = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            100.0 * (b as f64 - a as f64) / b as f64
        }
    };
    text.push_str(&format!(
        "{} turns, ~{} tokens in view → ~{} tokens ({:.0}% smaller; ~{} tokens raw)\n",
        before.turn_count(),
        tokens_before,
        tokens_after,
        pct(tokens_after, tokens_before),
        tokens_raw
    ));
    for (first, last, label) in &lines {
        let turns = if first == last {
            format!("turn {first}")
        } else {
            format!("turns {first}–{last}")
        };
        let (b, a): (usize, usize) = reports[(*first - 1) as usize..*last as usize]
            .iter()
            .fold((0, 0), |(b, a), r| {
                (b + r.tokens_before, a + r.tokens_after)
            });
        text.push_str(&format!("  {turns:<14} {label:<40} ~{b} → ~{a} tokens\n"));
    }
    for ((p, c), e) in plan.planned.iter().zip(compactions).zip(effects) {
        text.push_str(&format!(
            "{verb} turns {}–{}: {}\n",
            u64::from(c.from_turn) + 1,
            u64::from(c.to_turn) + 1,
            describe_effect(c, e).join(", ")
        ));
        if let Some((a, b)) = p.grown_from {
            text.push_str(&format!(
                "  (asked for turns {}–{}; grown to cover the summaries it overlaps)\n",
                a + 1,
                b + 1
            ));
        }
    }
    for s in &plan.skipped {
        text.push_str(&format!(
            "rule {}: nothing to do: {}\n",
            s.rule + 1,
            s.reason
        ));
    }
    // Only when something is folded: with nothing folded the output is the
    // input, unpaired events and all.
    let unpaired = if compactions.is_empty() {
        Vec::new()
    } else {
        unpaired_lines(after, &view_after)
    };
    for (_, line) in &unpaired {
        text.push_str(line);
        text.push('\n');
    }
    let preamble =
        !compactions.is_empty() && view_after.items.iter().any(|i| matches!(i, Item::Preamble));
    if preamble {
        text.push_str(&format!(
            "put `{}` first: the view would otherwise start with the assistant, which providers refuse\n",
            ctxfold_core::projection::PREAMBLE
        ));
    }
    let json = json!({
        "turns": before.turn_count(),
        "tokens": {"raw": tokens_raw, "before": tokens_before, "after": tokens_after},
        "timeline": lines.iter().map(|(f, l, label)| json!({"from_turn": f, "to_turn": l, "label": label})).collect::<Vec<_>>(),
        "per_turn": reports,
        "compactions": plan.planned.iter().zip(compactions).zip(effects).map(|((p, c), e)| {
            let mut o = serde_json::to_value(c).unwrap_or_default();
            if let Value::Object(m) = &mut o {
                if let Some((a, b)) = p.grown_from {
                    m.insert("grown_from".into(), json!([a + 1, b + 1]));
                }
                m.insert("effect".into(), json!(e));
            }
            o
        }).collect::<Vec<_>>(),
        "unpaired": unpaired.iter().map(|(v, _)| v.clone()).collect::<Vec<_>>(),
        "preamble": preamble,
        "skipped": plan.skipped.iter().map(|s| json!({"rule": s.rule + 1, "reason": s.reason})).collect::<Vec<_>>(),
    });
    (json, text)
}

fn plan_context(settings: &Settings, note: Option<&str>) -> PlanContext {
    PlanContext {
        now: Some(jiff::Timestamp::now()),
        hints: settings.hints.clone(),
        source: Source::User,
        note: note.map(str::to_owned),
        deferred_until_turn: None,
    }
}

/// `ctxfold compact FILE`.
pub fn compact_file(
    args: &CompactFileArgs,
    settings: &Settings,
    out: &Printer,
) -> anyhow::Result<()> {
    let (in_format, t) = ctxfold_formats::import_detected(&args.file, args.input_format.format())?;
    let out_format: Format = args.output_format.map_or(in_format, Format::from);
    render::warn_all(&t.warnings);
    let log = Log::from_records(t.records);
    let rules = rules_from_flags(&args.rule, settings)?;
    let ctx = plan_context(settings, args.rule.note.as_deref());
    // Refuse before any summary is paid for.
    let dest = match &args.output {
        Some(p) => p.clone(),
        None => default_output(&args.file, in_format, out_format),
    };
    let protect = crate::conversation::protect_workspaces(
        ctxfold_formats::output::Protect::input(&args.file),
    )?;
    if dest != Path::new("-") {
        protect.check(&dest)?;
    }
    if dest == Path::new("-") && out_format == Format::Jp {
        bail!("a JP conversation is a folder: name it with -o PATH");
    }
    let (plan, compactions, effects) = make_compactions(&log, &rules, &ctx, settings, false)?;
    let after = with_compactions(&log, &compactions, &ctxfold_store::now());
    // Nothing folded: the output is the input, record for record (no
    // preamble, no unpaired event left out).
    let records = if compactions.is_empty() {
        log.records().to_vec()
    } else {
        let view = project(&after);
        ctxfold_core::materialize::materialize(&after, &view)
    };
    let transcript = Transcript {
        records,
        title: t.title,
        extras: t.extras,
        warnings: Vec::new(),
    };
    let size_before = size_of(&args.file);
    let (json, mut text) = report(&log, &after, &plan, &compactions, &effects, "folded");
    let mut json = json;
    if compactions.is_empty() {
        text.push_str("nothing was folded: the output holds the input unchanged\n");
    }
    if dest == Path::new("-") {
        let bytes = export_bytes(&transcript, out_format)?;
        render::to_stdout(&bytes)?;
        eprint!("{text}");
        return Ok(());
    }
    ctxfold_formats::export_protected(&transcript, out_format, &dest, &protect)?;
    let size_after = size_of(&dest);
    text.push_str(&format!(
        "wrote {} ({out_format}): {} → {} bytes\n",
        dest.display(),
        size_before,
        size_after
    ));
    if let Value::Object(m) = &mut json {
        m.insert("output".into(), json!(dest.display().to_string()));
        m.insert(
            "bytes".into(),
            json!({"before": size_before, "after": size_after}),
        );
    }
    out.emit(&json, || text)
}

/// A one-file transcript exported to bytes.
pub fn export_bytes(t: &Transcript, format: Format) -> anyhow::Result<Vec<u8>> {
    Ok(ctxfold_formats::export_bytes(t, format, Path::new("-"))?)
}

/// `<name>.compacted<.ext>` beside the input (a folder for JP).
fn default_output(input: &Path, in_format: Format, out_format: Format) -> PathBuf {
    let base = if in_format == Format::Jp && input.is_file() {
        input.parent().unwrap_or(Path::new(".")).to_owned()
    } else {
        input.to_owned()
    };
    let base = base.components().as_path().to_owned();
    let name = base
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "transcript".into());
    let (stem, ext) = match (out_format, name.rsplit_once('.')) {
        (Format::Jp, _) => (name.clone(), String::new()),
        (_, Some((stem, ext))) if !base.is_dir() && out_format == in_format => {
            (stem.to_owned(), format!(".{ext}"))
        }
        (Format::Ctxfold, _) => (name.clone(), ".jsonl".into()),
        _ => (name.clone(), ".json".into()),
    };
    base.with_file_name(format!("{stem}.compacted{ext}"))
}

/// Bytes of a file, or of every file in a folder.
fn size_of(path: &Path) -> u64 {
    if path.is_dir() {
        std::fs::read_dir(path)
            .map(|d| d.flatten().map(|e| size_of(&e.path())).sum())
            .unwrap_or(0)
    } else {
        std::fs::metadata(path).map_or(0, |m| m.len())
    }
}

/// Compaction records of `log` in order, numbered from 1 as `show` lists
/// them: (number, record index).
pub fn numbered_compactions(log: &Log) -> Vec<(usize, usize)> {
    log.records()
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.body, Body::Compaction(_)))
        .enumerate()
        .map(|(n, (i, _))| (n + 1, i))
        .collect()
}

/// `conversation compact`.
#[allow(clippy::too_many_arguments)]
pub fn compact_conversation(
    ws: &Workspace,
    id: Option<&str>,
    flags: &RuleFlags,
    dry_run: bool,
    reset: Option<Option<usize>>,
    restore: Option<Option<usize>>,
    settings: &Settings,
    out: &Printer,
) -> anyhow::Result<()> {
    let c = ws.resolve(id)?;
    // Held until the records are appended: two compactions planned at once
    // could slice each other's summaries. A dry run writes nothing, so it
    // takes no lock (and works in a read-only workspace).
    let _lock = if dry_run {
        None
    } else {
        match c.log().try_compaction_lock()? {
            Some(lock) => Some(lock),
            None => bail!(
                "conversation {} is being compacted by another process; try again when it is done",
                c.meta.id
            ),
        }
    };
    let log = crate::conversation::load(&c)?;
    if reset.is_some() || restore.is_some() {
        return reset_or_restore(&c, &log, reset, restore, dry_run, out);
    }
    let rules = rules_from_flags(flags, settings)?;
    let ctx = plan_context(settings, flags.note.as_deref());
    let (plan, compactions, effects) = make_compactions(&log, &rules, &ctx, settings, dry_run)?;
    let ts = ctxfold_store::now();
    let after = with_compactions(&log, &compactions, &ts);
    let verb = if dry_run {
        "would compact"
    } else {
        "compacted"
    };
    let (mut json, mut text) = report(&log, &after, &plan, &compactions, &effects, verb);
    if compactions.is_empty() {
        text.push_str("nothing to compact; nothing was written\n");
    } else if dry_run {
        text.push_str("dry run: nothing was written\n");
    } else {
        let records = compactions
            .into_iter()
            .map(|comp| Record::new(0, ts.clone(), Body::Compaction(Box::new(comp))));
        let seqs = c.log().append(records)?;
        text.push_str(&format!(
            "appended {} compaction record(s) to {}; `ctxfold conversation compact --reset` undoes\n",
            seqs.end - seqs.start,
            c.meta.id
        ));
    }
    if let Value::Object(m) = &mut json {
        m.insert("dry_run".into(), json!(dry_run));
        m.insert("id".into(), json!(c.meta.id));
    }
    out.emit(&json, || text)
}

fn reset_or_restore(
    c: &ctxfold_store::Conversation,
    log: &Log,
    reset: Option<Option<usize>>,
    restore: Option<Option<usize>>,
    dry_run: bool,
    out: &Printer,
) -> anyhow::Result<()> {
    let numbered = numbered_compactions(log);
    let (_, inactive) = ctxfold_core::projection::compaction_status(log);
    let revoked: Vec<usize> = inactive
        .iter()
        .filter(|(_, why)| *why == Inactive::Revoked)
        .map(|(i, _)| *i)
        .collect();
    let (restoring, which) = match (reset, restore) {
        (Some(n), _) => (false, n),
        (None, Some(n)) => (true, n),
        (None, None) => unreachable!("called for --reset or --restore"),
    };
    let seq_of = |n: usize| -> anyhow::Result<u64> {
        numbered
            .iter()
            .find(|(k, _)| *k == n)
            .map(|(_, i)| log.records()[*i].seq)
            .with_context(|| {
                format!(
                    "no compaction {n}: this conversation has {} (see `ctxfold conversation show`)",
                    numbered.len()
                )
            })
    };
    let targets = match (which, restoring) {
        (Some(n), _) => ResetTargets::Some(vec![seq_of(n)?]),
        (None, false) => ResetTargets::All(AllMarker::All),
        (None, true) => ResetTargets::Some(revoked.iter().map(|&i| log.records()[i].seq).collect()),
    };
    let count = match &targets {
        ResetTargets::All(_) => numbered.len(),
        ResetTargets::Some(v) => v.len(),
    };
    let verb = match (restoring, dry_run) {
        (false, false) => "revoked",
        (false, true) => "would revoke",
        (true, false) => "restored",
        (true, true) => "would restore",
    };
    if count == 0 {
        let what = if restoring {
            "revoked compactions to restore"
        } else {
            "compactions to revoke"
        };
        return out.emit(&json!({"id": c.meta.id, verb: 0}), || format!("no {what}"));
    }
    let record = Record::new(
        0,
        ctxfold_store::now(),
        Body::CompactionReset(CompactionReset {
            targets,
            restore: restoring,
            extra: Object::new(),
        }),
    );
    if !dry_run {
        c.log().append([record])?;
    }
    out.emit(
        &json!({"id": c.meta.id, verb: count, "dry_run": dry_run}),
        || {
            format!(
                "{verb} {count} compaction(s) of {}; nothing was deleted",
                c.meta.id
            )
        },
    )
}

/// `conversation print --compacted`.
pub fn print_compacted(log: &Log, out: &Printer) -> anyhow::Result<()> {
    let view = project(log);
    if out.is_json() {
        let items: Vec<Value> = view
            .items
            .iter()
            .map(|item| {
                let origin = item.origin();
                let (first, last) = (*origin.start(), *origin.end());
                let mut o = match *item {
                    Item::Summary {
                        turns,
                        compaction,
                        text,
                        ..
                    } => json!({
                        "kind": "summary",
                        "turns": [turns.0 + 1, turns.1 + 1],
                        "compaction_seq": log.records()[compaction].seq,
                        "text": text,
                    }),
                    Item::Preamble => {
                        json!({"kind": "preamble", "content": ctxfold_core::projection::PREAMBLE})
                    }
                    _ => {
                        let rec = ctxfold_core::materialize::item_record(item);
                        let mut v = Value::Object(rec.map(|r| r.to_object()).unwrap_or_default());
                        if let Value::Object(m) = &mut v {
                            m.shift_remove("seq");
                            let kind = match item {
                                Item::StrippedCall { .. } => "stripped_call",
                                Item::StrippedResult { .. } => "stripped_result",
                                _ => "event",
                            };
                            m.insert("kind".into(), json!(kind));
                        }
                        v
                    }
                };
                if let (Value::Object(m), false) = (&mut o, matches!(item, Item::Preamble)) {
                    m.insert(
                        "origin".into(),
                        json!({
                            "seq": [log.records()[first].seq, log.records()[last].seq],
                            "turns": [log.turn_of(first) + 1, log.turn_of(last) + 1],
                        }),
                    );
                }
                o
            })
            .collect();
        let dropped: Vec<Value> = view
            .dropped
            .iter()
            .map(|d| {
                let mut reason = serde_json::to_value(d.reason).unwrap_or_default();
                // Name the compaction by its seq, as summaries do.
                if let Some(k) = reason.get_mut("compaction")
                    && let Some(i) = k.as_u64()
                {
                    *k = json!(log.records()[i as usize].seq);
                }
                json!({
                    "seq": log.records()[d.index].seq,
                    "turn": log.turn_of(d.index) + 1,
                    "reason": reason,
                })
            })
            .collect();
        return out.emit(&json!({"items": items, "dropped": dropped}), String::new);
    }
    // Turns are numbered as the conversation numbers them, not as the
    // compacted copy would.
    let entries = ctxfold_core::materialize::materialize_with_turns(log, &view);
    out.emit(&Value::Null, || {
        render::turns_text(entries.iter().map(|(turn, r)| (*turn, r)))
    })
}

/// `conversation fork`.
pub fn fork(
    ws: &Workspace,
    id: Option<&str>,
    specs: &[String],
    settings: &Settings,
    out: &Printer,
) -> anyhow::Result<()> {
    let c = ws.resolve(id)?;
    let log = crate::conversation::load(&c)?;
    let mut records = log.records().to_vec();
    let mut folded = 0;
    if !specs.is_empty() {
        let flags = RuleFlags {
            compact: specs.to_vec(),
            ..RuleFlags::default()
        };
        let rules = rules_from_flags(&flags, settings)?;
        let ctx = plan_context(settings, Some("fork"));
        let (_, compactions, _) = make_compactions(&log, &rules, &ctx, settings, false)?;
        folded = compactions.len();
        let ts = ctxfold_store::now();
        for comp in compactions {
            // After the log's own seqs, so renumbering the copy keeps order.
            let seq = match records.last() {
                None => 0,
                Some(r) => r.seq.checked_add(1).with_context(|| {
                    format!(
                        "conversation {}: its last record has seq {}, the largest there is; no record can follow it",
                        c.meta.id, r.seq
                    )
                })?,
            };
            records.push(Record::new(
                seq,
                ts.clone(),
                Body::Compaction(Box::new(comp)),
            ));
        }
    }
    let title = Some(format!(
        "fork of {}",
        c.meta.title.as_deref().unwrap_or(&c.meta.id)
    ));
    let mut new = ws.create(
        title,
        c.meta.imported_from.clone(),
        c.meta.extras.clone(),
        records,
    )?;
    ws.set_active(&mut new)?;
    let id = new.meta.id.clone();
    out.emit(
        &json!({"id": id, "from": c.meta.id, "compactions": folded}),
        || {
            if folded > 0 {
                format!("{id}\n(fork of {} with {folded} compaction(s))", c.meta.id)
            } else {
                id.clone()
            }
        },
    )
}

/// One line per compaction for `conversation show`, and the same as JSON.
pub fn compaction_listing(log: &Log) -> (Vec<Value>, String) {
    let (active, inactive) = ctxfold_core::projection::compaction_status(log);
    let mut json = Vec::new();
    let mut text = String::new();
    for (n, i) in numbered_compactions(log) {
        let Body::Compaction(c) = &log.records()[i].body else {
            continue;
        };
        let status = if active.contains(&i) {
            "active".to_owned()
        } else {
            match inactive.iter().find(|(k, _)| *k == i).map(|(_, w)| *w) {
                Some(Inactive::Revoked) => "revoked".into(),
                Some(Inactive::Deferred) => format!(
                    "deferred until turn {}",
                    u64::from(c.deferred_until_turn.unwrap_or_default()) + 1
                ),
                Some(Inactive::OutOfBounds) => "out of bounds".into(),
                None => "inactive".into(),
            }
        };
        let policies = describe_policies(c);
        let note = c
            .note
            .as_deref()
            .map(|n| format!(" — {n}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "  #{n} turns {}–{}: {} [{}, by {}]{note}\n",
            u64::from(c.from_turn) + 1,
            u64::from(c.to_turn) + 1,
            policies.join(", "),
            status,
            source_name(c.source)
        ));
        let mut v = serde_json::to_value(c.as_ref()).unwrap_or_default();
        if let Value::Object(m) = &mut v {
            m.insert("number".into(), json!(n));
            m.insert("seq".into(), json!(log.records()[i].seq));
            m.insert("status".into(), json!(status));
        }
        json.push(v);
    }
    (json, text)
}

/// What a compaction does, in words: its summary and where it came from,
/// its reasoning and tool policies, its per-tool overrides.
fn describe_policies(c: &Compaction) -> Vec<String> {
    use ctxfold_core::compaction::{Provenance, ToolPolicy};
    let mut out = Vec::new();
    match c.summary.as_ref().map(|s| &s.provenance) {
        Some(Provenance::Derived { summarizer, .. }) => {
            out.push(format!("summary by {summarizer}"))
        }
        Some(Provenance::Supplied { author }) => {
            out.push(format!("summary written by {}", source_name(*author)))
        }
        None => {}
    }
    if c.reasoning.is_some() {
        out.push("strip reasoning".into());
    }
    if let Some(t) = c.tool_calls {
        out.push(
            match t {
                ToolPolicy::Strip => "strip tool calls",
                ToolPolicy::StripRequests => "strip tool requests",
                ToolPolicy::StripResponses => "strip tool results",
                ToolPolicy::Omit => "omit tool calls",
            }
            .into(),
        );
    }
    for (tool, o) in &c.tool_overrides {
        out.push(format!("{tool}: {}", enum_name(o)));
    }
    out
}

fn enum_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn source_name(s: Source) -> String {
    enum_name(&s)
}
