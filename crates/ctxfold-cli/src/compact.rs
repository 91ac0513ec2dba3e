//! Compaction commands: `ctxfold compact FILE`, `conversation compact`,
//! `conversation print --compacted`, `conversation fork`, and the timeline
//! they print.

use std::path::Path;

use anyhow::{Context, bail};
use ctxfold_compactor::{Conversation, Fallback, Moment};
use ctxfold_core::projection::{Item, project};
use ctxfold_core::{Body, Log, Record};
use ctxfold_formats::{Format, Transcript};
use serde_json::{Value, json};

use crate::cli::{CompactFileArgs, RuleFlags};
use crate::compacting::{fallback_line, run_asked, run_rules};
use crate::outputs::{default_output, export_bytes, protect_workspaces, size_of};
use crate::render::{self, Printer};
use crate::rules::{plan_context, rules_from_flags, spec_flags};
use crate::settings::Settings;
use crate::store::Target;
use crate::timeline;

/// `query -k SPEC…`: compact the conversation before the turn, saying what
/// was done on standard error.
pub fn compact_before_turn(
    conv: &mut Conversation<'_>,
    specs: &[String],
    settings: &Settings,
) -> anyhow::Result<()> {
    let rules = rules_from_flags(&spec_flags(specs), settings)?;
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
    let protect = protect_workspaces(ctxfold_formats::output::Protect::input(&args.file))?;
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
        let rules = rules_from_flags(&spec_flags(specs), settings)?;
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
