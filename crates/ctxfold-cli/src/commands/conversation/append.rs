//! `conversation append`: records (ctxfold JSONL, `seq` optional) added
//! to a conversation; with `[compaction.auto] enabled`, a completed turn
//! runs the between-turn trigger.

use std::io::BufRead;
use std::path::Path;

use anyhow::Context as _;
use ctxfold_compactor::Outcome;
use ctxfold_core::{Object, Record};
use serde::Serialize;
use serde_json::{Value, json};

use crate::cli::AppendArgs;
use crate::context::Context;
use crate::render::{self, Report};

/// What was appended, and what automatic compaction did after.
#[derive(Serialize)]
pub struct Appended {
    id: String,
    appended: u64,
    first_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    auto: Option<Outcome>,
}

impl Report for Appended {}

impl std::fmt::Display for Appended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "appended {} records to {}", self.appended, self.id)?;
        if let Some(o) = self.auto.as_ref().filter(|o| o.compacted()) {
            f.write_str(&crate::auto::describe(o))?;
        }
        Ok(())
    }
}

pub fn run(ctx: &Context, args: AppendArgs) -> anyhow::Result<Appended> {
    let settings = ctx.settings()?;
    let target = ctx.target()?;
    let (input, window) = (args.input.as_path(), args.window);
    let meta = target.resolve(args.conversation.id.as_deref())?;
    let reader: Box<dyn BufRead> = if input == Path::new("-") {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(input).with_context(|| input.display().to_string())?;
        Box::new(std::io::BufReader::new(f))
    };
    let name = input.display().to_string();
    // Read and parse everything first, then append under the lock: a slow
    // or interactive input must not hold the conversation locked.
    let mut error = None;
    let mut warnings = Vec::new();
    let mut records = Vec::new();
    // Bounded like every input: an endless one (`/dev/zero`) must not
    // exhaust memory, in total or in one line.
    let limit = ctxfold_formats::max_input_bytes()?;
    let mut reader = std::io::Read::take(reader, limit.saturating_add(1));
    let mut buf = Vec::new();
    for i in 0.. {
        buf.clear();
        let parsed = match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) if reader.limit() == 0 => Err(anyhow::anyhow!(
                "more than {limit} bytes, the input limit; set {} to raise it",
                ctxfold_formats::MAX_INPUT_VAR
            )),
            Ok(_) => std::str::from_utf8(&buf)
                .map_err(|e| anyhow::anyhow!("not valid UTF-8 ({e})"))
                .and_then(|l| parse_append_line(l).map_err(anyhow::Error::msg)),
            Err(e) => Err(e.into()),
        };
        match parsed {
            Ok(Some((rec, w))) => {
                if let Some(w) = w {
                    warnings.push(format!("{name}:{}: {w}", i + 1));
                }
                records.push(rec);
            }
            Ok(None) => {}
            Err(e) => {
                error = Some(anyhow::anyhow!("{name}:{}: {e}", i + 1));
                break;
            }
        }
    }
    let range = target.store.append(&meta.id, records)?;
    render::warn_all(&warnings);
    let n = range.end - range.start;
    if let Some(e) = error {
        return Err(e.context(format!(
            "stopped there; the {n} records before it were appended"
        )));
    }
    // A completed turn runs the between-turn trigger (SPEC §8).
    let auto = if settings.auto.enabled && n > 0 {
        let journal = target.journal(&meta.id);
        let mut conv = ctxfold_compactor::Conversation::new(target.load(&meta.id)?, &journal);
        crate::auto::Auto::after_append(settings, &mut conv, window)?
    } else {
        None
    };
    Ok(Appended {
        id: meta.id,
        appended: n,
        first_seq: range.start,
        auto,
    })
}

/// One input line for `append`: a ctxfold record whose `seq` may be left
/// out (the log assigns it). Blank lines are skipped.
fn parse_append_line(
    line: &str,
) -> Result<Option<(Record, Option<ctxfold_core::RecordWarning>)>, String> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let mut obj: Object = match serde_json::from_str(line) {
        Ok(Value::Object(o)) => o,
        Ok(_) => return Err("expected a JSON object (one ctxfold record)".into()),
        Err(e) => return Err(format!("invalid JSON: {e}")),
    };
    if !obj.contains_key("seq") {
        obj.insert("seq".into(), json!(0));
    }
    if !obj.contains_key("ts") {
        obj.insert("ts".into(), json!(ctxfold_store::now()));
    }
    Record::from_object(obj)
        .map(Some)
        .map_err(|e| e.to_string())
}
