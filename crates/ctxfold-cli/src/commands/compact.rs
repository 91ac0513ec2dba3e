//! `ctxfold compact FILE`: a transcript compacted in one go, offline:
//! read, folded by the rules the flags make (or replayed with automatic
//! compaction, `--auto`), written back, and what was folded reported.

use std::path::Path;

use anyhow::bail;
use ctxfold_compactor::{Conversation, Fallback};
use ctxfold_core::kept::Kept;
use ctxfold_core::projection::project;
use ctxfold_core::{Compaction, Log};
use ctxfold_formats::output::{Protect, default_output, size_of};
use ctxfold_formats::{Format, Opened, Transcript};
use serde::Serialize;
use serde_json::{Value, json};

use crate::auto::Auto;
use crate::cli::CompactFileArgs;
use crate::compacting::run_asked;
use crate::context::Context;
use crate::render::{self, Report};
use crate::rules::{plan_context, rules_from_flags};
use crate::store::protect_workspaces;
use crate::timeline::{self, Timeline};

/// What was folded, and where the output went: a file or folder, or
/// standard output (the report's text then goes to standard error, and
/// there is no JSON).
pub struct Folded {
    timeline: Timeline,
    compactions: Vec<Compaction>,
    fallback: Option<Fallback>,
    /// With `--auto`: what the final view keeps of everything the firings
    /// folded together.
    retention: Option<Kept>,
    output: Output,
    /// For an agent's session written as a new session: the command that
    /// resumes it.
    resume: Option<String>,
}

/// Where the compacted transcript went.
enum Output {
    Written {
        dest: String,
        format: Format,
        before: u64,
        after: u64,
    },
    Stdout(Vec<u8>),
}

impl Report for Folded {
    fn raw(&self) -> Option<&[u8]> {
        match &self.output {
            Output::Stdout(bytes) => Some(bytes),
            Output::Written { .. } => None,
        }
    }
}

impl Serialize for Folded {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut json = self.timeline.json();
        if let (Some(kept), Value::Object(m)) = (&self.retention, &mut json) {
            m.insert("retention".into(), json!(kept));
        }
        if let Value::Object(m) = &mut json {
            m.insert("fallback".into(), json!(self.fallback));
        }
        if let (
            Output::Written {
                dest,
                before,
                after,
                ..
            },
            Value::Object(m),
        ) = (&self.output, &mut json)
        {
            m.insert("output".into(), json!(dest));
            m.insert("bytes".into(), json!({"before": before, "after": after}));
        }
        if let (Some(r), Value::Object(m)) = (&self.resume, &mut json) {
            m.insert("resume".into(), json!(r));
        }
        json.serialize(s)
    }
}

impl std::fmt::Display for Folded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = self.timeline.text();
        if self.compactions.is_empty() {
            text.push_str("nothing was folded: the output holds the input unchanged\n");
        }
        if let Some(fallback) = self.fallback {
            text.push_str(&fallback.line(&self.compactions));
        }
        if let Some(kept) = &self.retention
            && !self.compactions.is_empty()
        {
            text.push_str(&format!("all firings together: {}\n", kept.line()));
        }
        if let Output::Written {
            dest,
            format,
            before,
            after,
        } = &self.output
        {
            text.push_str(&format!(
                "wrote {dest} ({format}): {before} → {after} bytes\n"
            ));
        }
        if let Some(r) = &self.resume {
            text.push_str(&format!("resume it with: {r}\n"));
        }
        f.write_str(&text)
    }
}

/// With the built-in rule alone and nothing it could fold, the old turns
/// go to the digest instead ([`ctxfold_compactor::compact_by_default`]).
pub fn run(ctx: &Context, args: CompactFileArgs) -> anyhow::Result<Folded> {
    let settings = ctx.settings()?;
    let (in_format, mut t) =
        match ctxfold_formats::open_detected(&args.file, args.input_format.format())? {
            Opened::Whole(f, t) => (f, t),
            // An agent's session written back in its own format: its records'
            // hints (the lines they came from) held as text while the whole log
            // is in memory, a JSON tree again only as each is written.
            Opened::Records(f, mut read)
                if args.output_format.is_none_or(|o| Format::from(o) == f) =>
            {
                let records: Vec<_> = std::iter::from_fn(|| read.next_packed()).collect();
                let mut t = read.finish();
                t.records = records;
                (f, t)
            }
            Opened::Records(f, mut read) => {
                let records: Vec<_> = read.by_ref().collect();
                let mut t = read.finish();
                t.records = records;
                (f, t)
            }
        };
    let out_format: Format = args.output_format.map_or(in_format, Format::from);
    // An agent's session goes out as a new session beside the original.
    let session = ctxfold_formats::new_session(&mut t.extras, out_format);
    render::warn_all(&t.warnings);
    let log = Log::from_records(t.records);
    // Checked before anything is summarized.
    let auto = match args.auto {
        true => Some(Auto::from_flags(
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
    let plan_ctx = plan_context(settings, args.rule.note.as_deref());
    // Refuse before any summary is paid for.
    let dest = match &args.output {
        Some(p) => p.clone(),
        None => session
            .as_ref()
            .and_then(|id| ctxfold_formats::session_path(out_format, &args.file, id))
            .unwrap_or_else(|| default_output(&args.file, in_format, out_format)),
    };
    let protect = protect_workspaces(Protect::input(&args.file))?;
    if dest != Path::new("-") {
        protect.check(&dest)?;
    }
    if dest == Path::new("-") && out_format == Format::Jp {
        bail!("a JP conversation is a folder: name it with -o PATH");
    }
    let mut fallback: Option<Fallback> = None;
    let (mut seqs, mut ranges) = (Vec::new(), Vec::new());
    // A long session's records are several times its file (their hints are
    // JSON trees): at most two copies are alive at once, the log before and
    // after the run, and the output is made once the report is.
    let (plan, compactions, effects, before, after) = match &auto {
        Some(auto) => {
            let replay = auto.replay(&log)?;
            seqs = replay.seqs;
            ranges = replay.ranges;
            (
                replay.plan,
                replay.compactions,
                replay.effects,
                log,
                replay.log,
            )
        }
        None => {
            let journal = ctxfold_compactor::Memory;
            let n = log.len();
            let mut conv = Conversation::new(log, &journal);
            let run = run_asked(&mut conv, &args.rule, &rules, &plan_ctx, settings, false)?;
            fallback = run.fallback;
            let after = conv.into_log();
            // The run appends: the log before it is the records it started
            // with, copied only now that the run's own copies are gone.
            let before = Log::from_records(after.records()[..n.min(after.len())].to_vec());
            (run.plan, run.compactions, run.effects, before, after)
        }
    };
    let size_before = size_of(&args.file);
    let mut timeline = timeline::report(&before, &after, &plan, &compactions, &effects, "folded");
    // A replay's compactions are records of the replayed log, between the
    // transcript's own: each says its seq there (the transcript's records
    // before it keep theirs less the compactions before them).
    timeline.set_seqs(&seqs);
    // And what the final view keeps of everything the firings folded
    // together, each record once.
    let retention = auto
        .is_some()
        .then(|| timeline::union_retention(&after, &ranges));
    // Nothing folded: the output is the input, record for record (no
    // preamble, no unpaired event left out).
    let records = if compactions.is_empty() {
        drop(after);
        before.into_records()
    } else {
        drop(before);
        let view = project(&after);
        let records = ctxfold_core::materialize::materialize(&after, &view);
        drop(view);
        drop(after);
        records
    };
    let transcript = Transcript {
        records,
        title: t.title,
        extras: t.extras,
        warnings: Vec::new(),
    };
    let resume = session
        .as_ref()
        .and_then(|id| ctxfold_formats::resume_command(out_format, &transcript, id));
    let output = if dest == Path::new("-") {
        Output::Stdout(ctxfold_formats::export_bytes(
            &transcript,
            out_format,
            Path::new("-"),
        )?)
    } else {
        ctxfold_formats::export_protected(&transcript, out_format, &dest, &protect)?;
        Output::Written {
            dest: dest.display().to_string(),
            format: out_format,
            before: size_before,
            after: size_of(&dest),
        }
    };
    Ok(Folded {
        timeline,
        compactions,
        fallback,
        retention,
        output,
        resume,
    })
}
