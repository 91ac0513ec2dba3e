//! `ctxfold store copy --from SRC --to DST [IDS…]`: conversations (ids,
//! metadata, records byte for byte) from one store to another.

use anyhow::{Context as _, bail};
use ctxfold_core::Record;
use ctxfold_store::postgres::mask_url;
use ctxfold_store::{Store, StoreError};
use serde::Serialize;

use crate::cli::CopyArgs;
use crate::context::Context;
use crate::render::Report;
use crate::store::{is_url, open};

/// What happened to one conversation in a copy.
enum Copied {
    New(usize),
    AlreadyThere,
}

/// What a copy did, by conversation; it fails, once printed, if any was
/// not copied.
#[derive(Serialize)]
pub struct CopyReport {
    from: String,
    to: String,
    copied: Vec<CopiedOne>,
    already_there: Vec<String>,
    failed: Vec<Failed>,
}

#[derive(Serialize)]
struct CopiedOne {
    id: String,
    records: usize,
}

#[derive(Serialize)]
struct Failed {
    id: String,
    error: String,
}

impl Report for CopyReport {
    fn outcome(&self) -> anyhow::Result<()> {
        if self.failed.is_empty() {
            return Ok(());
        }
        let list: Vec<String> = self
            .failed
            .iter()
            .map(|f| format!("{}: {}", f.id, f.error))
            .collect();
        bail!(
            "{} conversation(s) not copied:\n  {}",
            self.failed.len(),
            list.join("\n  ")
        );
    }
}

impl std::fmt::Display for CopyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in &self.copied {
            writeln!(f, "copied {} ({} records)", c.id, c.records)?;
        }
        for id in &self.already_there {
            writeln!(f, "{id}: already there, identical; left alone")?;
        }
        writeln!(
            f,
            "{} copied, {} already there, {} not copied, from {} to {}",
            self.copied.len(),
            self.already_there.len(),
            self.failed.len(),
            self.from,
            self.to
        )
    }
}

pub fn run(_ctx: &Context, args: CopyArgs) -> anyhow::Result<CopyReport> {
    let (from, to, ids) = (&args.from, &args.to, &args.ids);
    same_store_check(from, to)?;
    let src = open(from, false).context("--from")?;
    let dst = open(to, true).context("--to")?;
    if src.store.location() == dst.store.location() {
        bail!(
            "--from and --to are the same store ({}): nothing to copy",
            src.store.location()
        );
    }
    let (src_name, dst_name) = (src.store.location(), dst.store.location());
    let mut failed = Vec::new();
    let wanted: Vec<String> = if ids.is_empty() {
        let listing = src.store.list()?;
        for b in listing.broken {
            failed.push(Failed {
                id: b.id,
                error: format!("{:#}", anyhow::Error::from(b.error)),
            });
        }
        listing.conversations.into_iter().map(|m| m.id).collect()
    } else {
        let mut found = Vec::new();
        for id in ids {
            match src.store.find(id) {
                Ok(m) => found.push(m.id),
                Err(e) => failed.push(Failed {
                    id: id.clone(),
                    error: format!("{:#}", anyhow::Error::from(e)),
                }),
            }
        }
        found
    };
    let mut copied = Vec::new();
    let mut there = Vec::new();
    for id in &wanted {
        match copy_one(&*src.store, &*dst.store, id) {
            Ok(Copied::New(n)) => copied.push(CopiedOne {
                id: id.clone(),
                records: n,
            }),
            Ok(Copied::AlreadyThere) => there.push(id.clone()),
            Err(e) => failed.push(Failed {
                id: id.clone(),
                error: format!("{e:#}"),
            }),
        }
    }
    Ok(CopyReport {
        from: src_name,
        to: dst_name,
        copied,
        already_there: there,
        failed,
    })
}

/// Refuse copying a store onto itself before connecting to anything.
fn same_store_check(from: &str, to: &str) -> anyhow::Result<()> {
    let same = if is_url(from) && is_url(to) {
        mask_url(from) == mask_url(to)
    } else if !is_url(from) && !is_url(to) {
        let canon = |p: &str| std::fs::canonicalize(p).ok();
        canon(from).is_some() && canon(from) == canon(to)
    } else {
        false
    };
    if same {
        bail!(
            "--from and --to are the same store ({}): nothing to copy",
            mask_url(from)
        );
    }
    Ok(())
}

/// Copy conversation `id` from `src` to `dst`, whole, keeping its id,
/// metadata and records byte for byte.
fn copy_one(src: &dyn Store, dst: &dyn Store, id: &str) -> anyhow::Result<Copied> {
    let meta = src.read_meta(id)?;
    let loaded = src.load(id)?;
    if !loaded.warnings.is_empty() {
        // Copying only what could be read would lose the rest.
        bail!(
            "its log holds lines ctxfold cannot read, which a copy would lose; not copied: {}",
            loaded.warnings.join("; ")
        );
    }
    let records = loaded.records;
    if let Some((i, r)) = records.iter().enumerate().find(|(i, r)| r.seq != *i as u64) {
        bail!(
            "record {} has seq {} where {i} was expected (seqs must run 0, 1, 2, … to be kept as they are); not copied",
            i + 1,
            r.seq
        );
    }
    match dst.read_meta(id) {
        Ok(there) => {
            let theirs = dst.load(id)?.records;
            let lines = |rs: &[Record]| rs.iter().map(Record::to_json_line).collect::<Vec<_>>();
            if there == meta && lines(&theirs) == lines(&records) {
                return Ok(Copied::AlreadyThere);
            }
            bail!(
                "a different conversation with this id is already in {} ({} records there, {} here); left alone, nothing written",
                dst.location(),
                theirs.len(),
                records.len()
            );
        }
        Err(StoreError::NotFound { .. } | StoreError::NoConversation { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let n = records.len();
    dst.create(&meta, records)?;
    Ok(Copied::New(n))
}
