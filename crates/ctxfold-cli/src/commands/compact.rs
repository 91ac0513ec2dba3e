//! `ctxfold compact FILE`: a transcript compacted in one go, offline:
//! read, folded by the rules the flags make (or replayed with automatic
//! compaction, `--auto`), written back, and what was folded reported.

use std::path::Path;

use anyhow::bail;
use ctxfold_compactor::{Conversation, Fallback};
use ctxfold_core::kept::Kept;
use ctxfold_core::materialize::Materialized;
use ctxfold_core::{Compaction, Log, Record};
use ctxfold_formats::codex::Rollout;
use ctxfold_formats::output::{Protect, default_output, size_of};
use ctxfold_formats::{
    Aside, Format, FormatError, Opened, RecordSource, SessionRecords, Transcript,
};
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
    // The hints of an agent's session's records, held apart from them.
    let mut aside: Option<Aside> = None;
    let (in_format, mut t) = match Session::open(&args.file, args.input_format.format())? {
        Input::Whole(f, t) => (f, t),
        // An agent's session written back in its own format: its records'
        // hints (the lines they came from) held as text while the whole log
        // is in memory, a JSON tree again only as each is written. Apart
        // from the records (by their place in the session), so the copies
        // the report and the output make do not copy them; a replay
        // (`--auto`) places its compactions between the records: they
        // stay in the records.
        Input::Session(f, mut read) if args.output_format.is_none_or(|o| Format::from(o) == f) => {
            let mut records = Vec::with_capacity(read.bound());
            if args.auto {
                records.extend(std::iter::from_fn(|| read.next_packed()));
            } else {
                let mut a = read.aside();
                records.extend(std::iter::from_fn(|| read.next_aside(&mut a)));
                aside = Some(a);
            }
            let mut t = read.finish()?;
            t.records = records;
            (f, t)
        }
        Input::Session(f, mut read) => {
            let mut records = Vec::with_capacity(read.bound());
            records.extend(std::iter::from_fn(|| read.next()));
            let mut t = read.finish()?;
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
    // A long session's records are about its file's size again: one copy
    // is kept, the log after the run; what the report says of the log
    // before it is taken before the run, and the output is made once the
    // report is.
    let before = timeline::Before::of(&log);
    let n = log.len();
    // The input, when it is also the output (nothing folded) and the run's
    // log is not it: a replay's.
    let mut input: Option<Log> = None;
    let (plan, compactions, effects, after) = match &auto {
        Some(auto) => {
            let replay = auto.replay(&log)?;
            if replay.compactions.is_empty() {
                input = Some(log);
            } else {
                drop(log);
            }
            seqs = replay.seqs;
            ranges = replay.ranges;
            (replay.plan, replay.compactions, replay.effects, replay.log)
        }
        None => {
            let journal = ctxfold_compactor::Memory;
            let mut conv = Conversation::new(log, &journal);
            let run = run_asked(&mut conv, &args.rule, &rules, &plan_ctx, settings, false)?;
            fallback = run.fallback;
            (run.plan, run.compactions, run.effects, conv.into_log())
        }
    };
    // The input's records once the run is done with: the run only appends.
    let input_records = |after: Log| match input {
        Some(log) => log.into_records(),
        None => {
            let mut records = after.into_records();
            records.truncate(n);
            records
        }
    };
    let size_before = size_of(&args.file);
    // The view after the run, made once: for the report, then written.
    let (mut timeline, view) =
        timeline::report_and_view(before, &after, &plan, &compactions, &effects, "folded");
    // A replay's compactions are records of the replayed log, between the
    // transcript's own: each says its seq there (the transcript's records
    // before it keep theirs less the compactions before them).
    timeline.set_seqs(&seqs);
    // And what the final view keeps of everything the firings folded
    // together, each record once.
    let retention = auto
        .is_some()
        .then(|| timeline::union_retention(&after, &ranges));
    // The output's title and extras.
    let head = Transcript {
        records: Vec::new(),
        title: t.title,
        extras: t.extras,
        warnings: Vec::new(),
    };
    let resume = session
        .as_ref()
        .and_then(|id| ctxfold_formats::resume_command(out_format, &head, id));
    let aside = aside.as_ref();
    let stdout = dest == Path::new("-");
    let written = |dest: &Path| Output::Written {
        dest: dest.display().to_string(),
        format: out_format,
        before: size_before,
        after: size_of(dest),
    };
    let output = if compactions.is_empty() && aside.is_none() {
        // Nothing folded: the output is the input, record for record (no
        // preamble, no unpaired event left out), written whole.
        drop(view);
        let mut whole = head;
        whole.records = input_records(after);
        if stdout {
            Output::Stdout(ctxfold_formats::export_bytes(&whole, out_format, &dest)?)
        } else {
            ctxfold_formats::export_protected(&whole, out_format, &dest, &protect)?;
            written(&dest)
        }
    } else {
        // The records come one at a time, made as they are written, each
        // with its hints put back.
        let (unchanged, made);
        let records: &dyn RecordSource = if compactions.is_empty() {
            drop(view);
            unchanged = Unchanged {
                records: input_records(after),
                aside,
            };
            &unchanged
        } else {
            made = Made {
                made: Materialized::new(&after, &view),
                aside,
            };
            &made
        };
        if stdout {
            Output::Stdout(ctxfold_formats::export_streamed_bytes(
                &head, records, out_format, &dest,
            )?)
        } else {
            ctxfold_formats::export_streamed(&head, records, out_format, &dest, &protect)?;
            written(&dest)
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

/// The input's records, unchanged, as the export reads them: each with its
/// hints put back (a copy, one at a time) when they were set aside.
struct Unchanged<'a> {
    records: Vec<Record>,
    aside: Option<&'a Aside>,
}

impl RecordSource for Unchanged<'_> {
    fn each(&self, f: &mut dyn FnMut(&Record) -> std::io::Result<()>) -> std::io::Result<()> {
        for (i, r) in self.records.iter().enumerate() {
            match self.aside {
                Some(aside) => {
                    let mut r = r.clone();
                    aside.restore(&mut r, i);
                    f(&r)?;
                }
                None => f(r)?,
            }
        }
        Ok(())
    }
}

/// The compacted transcript, made a record at a time as the export reads
/// it (never whole beside the log), each record made from one of the
/// input's with that record's hints put back.
struct Made<'a, 'l, 'v, 'w> {
    made: Materialized<'l, 'v, 'w>,
    aside: Option<&'a Aside>,
}

impl RecordSource for Made<'_, '_, '_, '_> {
    fn each(&self, f: &mut dyn FnMut(&Record) -> std::io::Result<()>) -> std::io::Result<()> {
        self.made.each(&mut |m| {
            let mut r = m.record;
            // Indices past the input's are the run's compactions.
            if let (Some(aside), Some(i)) = (self.aside, m.source) {
                aside.restore(&mut r, i);
            }
            f(&r)
        })
    }
}

/// A transcript opened: an agent's session record by record, or another
/// format whole.
enum Input {
    Session(Format, Session),
    Whole(Format, Transcript),
}

/// An agent's session read record by record: a Codex rollout from its
/// file a line at a time (the file's bytes never held whole beside its
/// records), another from its bytes.
enum Session {
    Rollout(Box<Rollout>),
    Records(SessionRecords),
}

impl Session {
    /// The transcript at `path`, as [`ctxfold_formats::open_detected`]
    /// reads it.
    fn open(path: &Path, format: Option<Format>) -> Result<Input, FormatError> {
        if let Some(r) = Rollout::open(path, format)? {
            return Ok(Input::Session(Format::Codex, Session::Rollout(Box::new(r))));
        }
        Ok(match ctxfold_formats::open_detected(path, format)? {
            Opened::Records(f, r) => Input::Session(f, Session::Records(r)),
            Opened::Whole(f, t) => Input::Whole(f, t),
        })
    }

    /// At least as many records as the session reads into, when known
    /// (else 0).
    fn bound(&self) -> usize {
        match self {
            Session::Rollout(r) => r.bound(),
            Session::Records(_) => 0,
        }
    }

    fn next(&mut self) -> Option<Record> {
        match self {
            Session::Rollout(r) => r.next(),
            Session::Records(r) => r.next(),
        }
    }

    fn next_packed(&mut self) -> Option<Record> {
        match self {
            Session::Rollout(r) => r.next_packed(),
            Session::Records(r) => r.next_packed(),
        }
    }

    fn aside(&self) -> Aside {
        match self {
            Session::Rollout(r) => r.aside(),
            Session::Records(r) => r.aside(),
        }
    }

    fn next_aside(&mut self, aside: &mut Aside) -> Option<Record> {
        match self {
            Session::Rollout(r) => r.next_aside(aside),
            Session::Records(r) => r.next_aside(aside),
        }
    }

    fn finish(self) -> Result<Transcript, FormatError> {
        match self {
            Session::Rollout(r) => r.finish(),
            Session::Records(r) => Ok(r.finish()),
        }
    }
}
