//! The real agent conversations the tests read: `shared/corpus/jp` beside
//! the repository (as CI has it), or the folder `CTXFOLD_CORPUS` names.
//! They are read from there and never copied into the repository.

use std::path::PathBuf;

/// The variable that names another corpus folder.
pub const ENV: &str = "CTXFOLD_CORPUS";

/// The corpus folder. Panics when it is missing: a test of the corpus is
/// worth nothing without it.
pub fn dir() -> PathBuf {
    let dir = std::env::var_os(ENV).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/jp"),
        PathBuf::from,
    );
    assert!(
        dir.is_dir(),
        "corpus not found at {} (set {ENV} to its folder)",
        dir.display()
    );
    dir
}

/// Every conversation of the corpus (one folder each), sorted by name.
/// Panics when there are fewer than ten: a corpus cut short would let the
/// tests over it pass on too little.
pub fn conversations() -> Vec<PathBuf> {
    let dir = dir();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading the corpus at {}: {e}", dir.display()))
        .map(|e| e.expect("a corpus folder entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 10,
        "corpus too small: {} conversations",
        dirs.len()
    );
    dirs
}
