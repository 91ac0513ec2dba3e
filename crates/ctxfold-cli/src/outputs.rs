//! Where outputs go: the default name of `compact FILE`'s output, the
//! folders no output may replace (the input, every workspace), and a
//! one-file transcript as bytes for standard output.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use ctxfold_formats::output::Protect;
use ctxfold_formats::{Format, Transcript};
use ctxfold_store::Workspace;

fn current_dir() -> anyhow::Result<PathBuf> {
    std::env::current_dir().context("cannot read the current directory")
}

/// `base` and every workspace folder a command run here could use: an
/// output written there could replace a conversation's log, `active` or
/// `meta.json`, so none goes there.
pub fn protect_workspaces(base: Protect) -> anyhow::Result<Protect> {
    let cwd = current_dir()?;
    Ok(Workspace::known_roots(&cwd).iter().fold(base, |p, root| {
        p.and_folder(root, "a ctxfold workspace folder")
    }))
}

/// A one-file transcript exported to bytes.
pub fn export_bytes(t: &Transcript, format: Format) -> anyhow::Result<Vec<u8>> {
    Ok(ctxfold_formats::export_bytes(t, format, Path::new("-"))?)
}

/// `<name>.compacted<.ext>` beside the input (a folder for JP).
pub fn default_output(input: &Path, in_format: Format, out_format: Format) -> PathBuf {
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
pub fn size_of(path: &Path) -> u64 {
    if path.is_dir() {
        std::fs::read_dir(path)
            .map(|d| d.flatten().map(|e| size_of(&e.path())).sum())
            .unwrap_or(0)
    } else {
        std::fs::metadata(path).map_or(0, |m| m.len())
    }
}
