//! Compaction commands: `ctxfold compact FILE`, `conversation compact`,
//! `conversation print --compacted`, `conversation fork`, and the timeline
//! they print.

use std::path::{Path, PathBuf};

use crate::store::Target;
use anyhow::{Context, bail};
use ctxfold_compactor::{Conversation, Fallback, Moment, Run};
use ctxfold_core::bounds::{Bound, Keep};
use ctxfold_core::compaction::{ReasoningPolicy, Source};
use ctxfold_core::digest::Digest;
use ctxfold_core::planner::{PlanContext, Rule, SummaryRequest};
use ctxfold_core::projection::{Inactive, Item, project};
use ctxfold_core::summarizer::Summarizer;
use ctxfold_core::{Body, Compaction, Log, Record, dsl};
use ctxfold_formats::{Format, Transcript};
use serde_json::{Value, json};

use crate::cli::{CompactFileArgs, RuleFlags};
use crate::render::{self, Printer};
use crate::settings::Settings;
use crate::timeline;

/// The rules a command's flags ask for (SPEC §5, §11):
/// - `-r`, `-t`, `-s` with the range flags make one rule; range flags alone
///   use the built-in policies (strip reasoning and tools), and policy flags
///   alone the configured keep (`keep_first`/`keep_last` of the first
///   configured rule that has each, and `keep_steps`), else the built-in
///   one (keep the first turn and the last three, and of those kept turns
///   together only the last four steps);
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
        rule.keep_steps = flags.keep_steps;
        if !has_range {
            // Policy flags alone keep what config keeps (each from the first
            // rule that sets it), else the built-in rule: the opening turn
            // and the latest ones stay verbatim unless a range says
            // otherwise (a bare -s must not summarize the turn in hand).
            let builtin = Rule::builtin();
            let rules = || settings.rules.iter();
            rule.keep_first = rules().find_map(|r| r.keep_first).or(builtin.keep_first);
            rule.keep_last = rules().find_map(|r| r.keep_last).or(builtin.keep_last);
            rule.keep_steps = flags
                .keep_steps
                .or(rules().find_map(|r| r.keep_steps))
                .or(builtin.keep_steps);
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
        // `--keep-steps N` alone: the configured rules, N steps kept.
        let configured = settings.rules.iter().cloned().map(|mut r| {
            if flags.keep_steps.is_some() {
                r.keep_steps = flags.keep_steps;
            }
            r
        });
        rules.extend(configured);
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

/// The rules the compact commands were given, run: the default run (the
/// built-in rule, or the digest where it folds nothing) when the user
/// asked for no rule, else [`run_rules`]. `ctxfold compact FILE` and
/// `conversation compact` (and its `--dry-run`) both plan by this.
fn run_asked(
    conv: &mut Conversation<'_>,
    flags: &RuleFlags,
    rules: &[Rule],
    ctx: &PlanContext,
    settings: &Settings,
    dry_run: bool,
) -> anyhow::Result<Run> {
    if !builtin_only(flags, rules) {
        return run_rules(conv, rules, ctx, settings, dry_run);
    }
    Ok(ctxfold_compactor::compact_by_default(
        conv,
        ctx,
        &CliSummarizers::new(settings.clone()),
        dry_run,
    )?)
}

/// Run `rules` on the conversation through the compaction service: plan,
/// summarize, check, leave out what would change nothing, and append
/// (unless `dry_run`).
fn run_rules(
    conv: &mut Conversation<'_>,
    rules: &[Rule],
    ctx: &PlanContext,
    settings: &Settings,
    dry_run: bool,
) -> anyhow::Result<Run> {
    Ok(ctxfold_compactor::compact_with_rules(
        conv,
        rules,
        ctx,
        &CliSummarizers::new(settings.clone()),
        dry_run,
    )?)
}

/// `query -k SPEC…`: compact the conversation before the turn, saying what
/// was done on standard error.
pub fn compact_before_turn(
    conv: &mut Conversation<'_>,
    specs: &[String],
    settings: &Settings,
) -> anyhow::Result<()> {
    let flags = RuleFlags {
        compact: specs.to_vec(),
        ..RuleFlags::default()
    };
    let rules = rules_from_flags(&flags, settings)?;
    let ctx = plan_context(settings, Some("before a query (-k)"));
    let run = run_rules(conv, &rules, &ctx, settings, false)?;
    for (c, e) in run.compactions.iter().zip(&run.effects) {
        crate::render::say!(
            "compacted turns {}–{}: {}",
            u64::from(c.from_turn) + 1,
            u64::from(c.to_turn) + 1,
            e.describe(c).join(", ")
        );
    }
    Ok(())
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

/// `ctxfold compact FILE`. With the built-in rule alone and nothing it
/// could fold, the old turns go to the digest instead
/// ([`ctxfold_compactor::compact_by_default`]).
pub fn compact_file(
    args: &CompactFileArgs,
    settings: &Settings,
    out: &Printer,
) -> anyhow::Result<()> {
    let (in_format, t) = ctxfold_formats::import_detected(&args.file, args.input_format.format())?;
    let out_format: Format = args.output_format.map_or(in_format, Format::from);
    render::warn_all(&t.warnings);
    let log = Log::from_records(t.records);
    // Checked before anything is summarized.
    let auto = match args.auto {
        true => Some(crate::auto::Auto::from_flags(
            settings,
            args.window,
            args.rule.model.as_deref(),
        )?),
        false => None,
    };
    let rules = if auto.is_some() {
        Vec::new()
    } else {
        rules_from_flags(&args.rule, settings)?
    };
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
    let mut fallback: Option<Fallback> = None;
    let (mut seqs, mut ranges) = (Vec::new(), Vec::new());
    let (plan, compactions, effects, after) = match &auto {
        Some(auto) => {
            let replay = auto.replay(&log, settings)?;
            seqs = replay.seqs;
            ranges = replay.ranges;
            (replay.plan, replay.compactions, replay.effects, replay.log)
        }
        None => {
            let journal = ctxfold_compactor::Memory;
            let mut conv = Conversation::new(log.clone(), &journal);
            let run = run_asked(&mut conv, &args.rule, &rules, &ctx, settings, false)?;
            fallback = run.fallback;
            (run.plan, run.compactions, run.effects, conv.into_log())
        }
    };
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
    let (json, mut text) = timeline::report(&log, &after, &plan, &compactions, &effects, "folded");
    let mut json = json;
    if compactions.is_empty() {
        text.push_str("nothing was folded: the output holds the input unchanged\n");
    }
    if let Some(Fallback::Digest) = fallback {
        text.push_str(&fallback_line(&compactions));
    }
    // A replay's compactions are records of the replayed log, between the
    // transcript's own: each says its seq there (the transcript's records
    // before it keep theirs less the compactions before them).
    if let Some(Value::Array(list)) = json.get_mut("compactions") {
        for (c, seq) in list.iter_mut().zip(&seqs) {
            if let Value::Object(m) = c {
                m.insert("seq".into(), json!(seq));
            }
        }
    }
    // And what the final view keeps of everything the firings folded
    // together, each record once.
    if auto.is_some() {
        let kept = timeline::union_retention(&after, &ranges);
        if !compactions.is_empty() {
            text.push_str(&format!("all firings together: {}\n", kept.line()));
        }
        if let Value::Object(m) = &mut json {
            m.insert("retention".into(), json!(kept));
        }
    }
    if let Value::Object(m) = &mut json {
        m.insert("fallback".into(), json!(fallback));
    }
    if dest == Path::new("-") {
        let bytes = export_bytes(&transcript, out_format)?;
        render::to_stdout(&bytes)?;
        crate::render::to_stderr(&text);
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

/// Whether the rules of a compact command are the built-in rule alone,
/// the user having asked for none: no rule flag, no `-k`, and no
/// configured rule other than it.
fn builtin_only(flags: &RuleFlags, rules: &[Rule]) -> bool {
    let asked = flags.keep_first.is_some()
        || flags.keep_last.is_some()
        || flags.keep_steps.is_some()
        || flags.from.is_some()
        || flags.to.is_some()
        || flags.reasoning
        || flags.tools.is_some()
        || flags.summarize
        || flags.summary_text.is_some()
        || !flags.compact.is_empty();
    !asked && rules == [Rule::builtin()]
}

/// The report's line for a default run that fell back to the digest.
fn fallback_line(compactions: &[Compaction]) -> String {
    let turns = compactions
        .iter()
        .map(|c| turn_span(c.from_turn, c.to_turn))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "the built-in rule had nothing mechanical to fold (no tool call or old reasoning to strip); {turns} summarized offline by the digest instead\n"
    )
}

/// `turn N` or `turns N–M`, 1-based, from 0-based turns.
fn turn_span(from: u32, to: u32) -> String {
    let (a, b) = (u64::from(from) + 1, u64::from(to) + 1);
    if a == b {
        format!("turn {a}")
    } else {
        format!("turns {a}–{b}")
    }
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

pub use ctxfold_compactor::reset::numbered_compactions;

/// Whether each compaction record (by index) is in force, in words:
/// `active`, `deferred until turn N`, `revoked`, `out of bounds`.
pub fn compaction_statuses(log: &Log) -> std::collections::HashMap<usize, String> {
    let (active, inactive) = ctxfold_core::projection::compaction_status(log);
    let mut out: std::collections::HashMap<usize, String> = active
        .into_iter()
        .map(|i| (i, "active".to_owned()))
        .collect();
    for (i, why) in inactive {
        let words = match why {
            Inactive::Revoked => "revoked".to_owned(),
            Inactive::Deferred => match &log.records()[i].body {
                Body::Compaction(c) => format!(
                    "deferred until turn {}",
                    u64::from(c.deferred_until_turn.unwrap_or_default()) + 1
                ),
                _ => "deferred".to_owned(),
            },
            Inactive::OutOfBounds => "out of bounds".to_owned(),
        };
        out.insert(i, words);
    }
    out
}

/// `conversation compact`.
#[allow(clippy::too_many_arguments)]
pub fn compact_conversation(
    target: &Target,
    id: Option<&str>,
    flags: &RuleFlags,
    dry_run: bool,
    reset: Option<Option<usize>>,
    restore: Option<Option<usize>>,
    auto: Option<Moment>,
    window: Option<u32>,
    settings: &Settings,
    out: &Printer,
) -> anyhow::Result<()> {
    let meta = target.resolve(id)?;
    if reset.is_some() || restore.is_some() {
        return reset_or_restore(target, &meta.id, reset, restore, dry_run, out);
    }
    let log = target.load(&meta.id)?;
    let store = target.journal(&meta.id);
    let mut conv = Conversation::new(log, &store);
    if let Some(moment) = auto {
        let auto = crate::auto::Auto::from_flags(settings, window, flags.model.as_deref())?;
        return auto.once(&mut conv, moment, dry_run, &meta.id, out);
    }
    let rules = rules_from_flags(flags, settings)?;
    let ctx = plan_context(settings, flags.note.as_deref());
    let run = run_asked(&mut conv, flags, &rules, &ctx, settings, dry_run).map_err(|e| {
        match e.downcast_ref::<ctxfold_compactor::CompactError>() {
            Some(ctxfold_compactor::CompactError::Busy) => anyhow::anyhow!(
                "conversation {} is being compacted by another process; try again when it is done",
                meta.id
            ),
            _ => e,
        }
    })?;
    let before = Log::from_records(conv.log().records()[..run.planned_on].to_vec());
    let after = ctxfold_compactor::effect::with_compactions(&before, &run.compactions, "");
    let verb = if dry_run {
        "would compact"
    } else {
        "compacted"
    };
    let (mut json, mut text) = timeline::report(
        &before,
        &after,
        &run.plan,
        &run.compactions,
        &run.effects,
        verb,
    );
    if run.fallback == Some(Fallback::Digest) {
        text.push_str(&fallback_line(&run.compactions));
    }
    if run.compactions.is_empty() {
        text.push_str("nothing to compact; nothing was written\n");
    } else if dry_run {
        text.push_str("dry run: nothing was written\n");
    } else {
        text.push_str(&format!(
            "appended {} compaction record(s) to {}; `ctxfold conversation compact --reset` undoes\n",
            run.seqs.len(),
            meta.id
        ));
    }
    if let Value::Object(m) = &mut json {
        m.insert("dry_run".into(), json!(dry_run));
        m.insert("id".into(), json!(meta.id));
        m.insert("fallback".into(), json!(run.fallback));
    }
    out.emit(&json, || text)
}

/// `--reset [N]` / `--restore [N]`: the reset record the browser pages
/// append too, made and appended by `ctxfold_compactor::reset`.
fn reset_or_restore(
    target: &Target,
    id: &str,
    reset: Option<Option<usize>>,
    restore: Option<Option<usize>>,
    dry_run: bool,
    out: &Printer,
) -> anyhow::Result<()> {
    let (restoring, which) = match (reset, restore) {
        (Some(n), _) => (false, n),
        (None, Some(n)) => (true, n),
        (None, None) => unreachable!("called for --reset or --restore"),
    };
    let done = ctxfold_compactor::reset::reset(&*target.store, id, restoring, which, dry_run)?;
    render::warn_all(&done.warnings);
    let count = done.reset.count;
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
        return out.emit(&json!({"id": id, verb: 0}), || format!("no {what}"));
    }
    out.emit(&json!({"id": id, verb: count, "dry_run": dry_run}), || {
        format!(
            "{verb} {count} compaction(s) of {}; nothing was deleted",
            id
        )
    })
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
                                Item::Clipped { .. } => "clipped",
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
        render::turns_text(
            entries.iter().map(|(turn, r)| (*turn, r)),
            &Default::default(),
        )
    })
}

/// `conversation fork`.
pub fn fork(
    target: &Target,
    id: Option<&str>,
    specs: &[String],
    settings: &Settings,
    out: &Printer,
) -> anyhow::Result<()> {
    let meta = target.resolve(id)?;
    let log = target.load(&meta.id)?;
    let mut records = log.records().to_vec();
    let mut folded = 0;
    if !specs.is_empty() {
        let flags = RuleFlags {
            compact: specs.to_vec(),
            ..RuleFlags::default()
        };
        let rules = rules_from_flags(&flags, settings)?;
        let ctx = plan_context(settings, Some("fork"));
        // Planned on a copy in memory: the original is not touched.
        let journal = ctxfold_compactor::Memory;
        let mut conv = Conversation::new(log.clone(), &journal);
        let compactions = run_rules(&mut conv, &rules, &ctx, settings, false)?.compactions;
        folded = compactions.len();
        let ts = ctxfold_store::now();
        for comp in compactions {
            // After the log's own seqs, so renumbering the copy keeps order.
            let seq = match records.last() {
                None => 0,
                Some(r) => r.seq.checked_add(1).with_context(|| {
                    format!(
                        "conversation {}: its last record has seq {}, the largest there is; no record can follow it",
                        meta.id, r.seq
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
        meta.title.as_deref().unwrap_or(&meta.id)
    ));
    let new = ctxfold_store::create_new(
        &*target.store,
        title,
        meta.imported_from.clone(),
        meta.extras.clone(),
        records,
    )?;
    let id = target.store.set_active(&new.id)?.id;
    out.emit(
        &json!({"id": id, "from": meta.id, "compactions": folded}),
        || {
            if folded > 0 {
                format!("{id}\n(fork of {} with {folded} compaction(s))", meta.id)
            } else {
                id.clone()
            }
        },
    )
}

/// One line per compaction for `conversation show`, and the same as JSON;
/// with `lost`, the JSON lists what each compaction lost (with ranges
/// nested from the first record, those lists grow with the square of the
/// conversation: the text needs only the counts).
pub fn compaction_listing(log: &Log, lost: bool) -> (Vec<Value>, String) {
    let statuses = compaction_statuses(log);
    let mut json = Vec::new();
    let mut text = String::new();
    // What each compaction in force leaves visible of its range's facts,
    // in the view as it is now; a deferred one, in the view it will come
    // into force in (each made only when needed). A revoked one folds
    // nothing.
    let has = |p: &str| statuses.values().any(|s| s.starts_with(p));
    let next = log.turn_count() as u32;
    let numbered = numbered_compactions(log);
    // Which view each compaction's report is made in (`Some(true)`: now,
    // `Some(false)`: once the deferred come into force), and then the
    // reports of each view's ranges all at once, one pass over the view.
    let in_view: Vec<Option<(bool, (usize, usize))>> = numbered
        .iter()
        .map(|&(_, i)| {
            let Body::Compaction(c) = &log.records()[i].body else {
                return None;
            };
            let status = statuses.get(&i).map(String::as_str).unwrap_or_default();
            let now = if status == "active" {
                true
            } else if status.starts_with("deferred")
                && c.deferred_until_turn.is_some_and(|t| t <= next)
            {
                false
            } else {
                return None;
            };
            ctxfold_core::projection::covered_indices(log, c).map(|range| (now, range))
        })
        .collect();
    let reports = |now: bool| -> Vec<ctxfold_core::kept::Kept> {
        let ranges: Vec<(usize, usize)> = in_view
            .iter()
            .flatten()
            .filter(|(n, _)| *n == now)
            .map(|&(_, r)| r)
            .collect();
        if ranges.is_empty() {
            return Vec::new();
        }
        let view = if now {
            project(log)
        } else {
            ctxfold_core::projection::project_as_of(log, next)
        };
        ctxfold_core::kept::Retentions::new(log, &view).of(&ranges, lost)
    };
    let (mut now_kept, mut later_kept) = (
        reports(true).into_iter(),
        if has("deferred") {
            reports(false)
        } else {
            Vec::new()
        }
        .into_iter(),
    );
    for ((n, i), in_view) in numbered.into_iter().zip(in_view) {
        let Body::Compaction(c) = &log.records()[i].body else {
            continue;
        };
        let status = statuses.get(&i).cloned().unwrap_or_default();
        let policies = c.describe();
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
        let kept = match in_view {
            Some((true, _)) => now_kept.next(),
            Some((false, _)) => later_kept.next(),
            None => None,
        };
        if let Some(k) = &kept {
            text.push_str(&format!("      {}\n", k.line()));
        }
        if let Some(f) = &c.budget {
            text.push_str(&format!("      {}\n", f.line()));
        }
        let mut v = serde_json::to_value(c.as_ref()).unwrap_or_default();
        if let Value::Object(m) = &mut v {
            m.insert("number".into(), json!(n));
            m.insert("seq".into(), json!(log.records()[i].seq));
            m.insert("status".into(), json!(status));
            if let Some(k) = kept {
                m.insert("kept".into(), json!(k));
            }
        }
        json.push(v);
    }
    (json, text)
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
