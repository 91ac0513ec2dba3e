//! Agents' session files as a user runs ctxfold on them (issue 48: import
//! and compact in at most 3x the file's size in peak memory): the release
//! binary started as a process on a generated session file, timed by
//! divan, and the peak resident memory of each run (the child's own
//! `ru_maxrss`, from `wait4`) printed after divan's table, as a multiple
//! of the file's size. Figures: `docs/PERFORMANCE.md`.
//!
//! `cargo bench -p ctxfold --bench session_files` (the sessions are
//! generated first: about 800 MB of temporary space). With
//! `CTXFOLD_BENCH_BIN=PATH` it runs that binary instead of the one built
//! with the benchmark: how the figures before a change are taken. With
//! `CTXFOLD_BENCH_KEEP=DIR` the generated files are kept in DIR (and read
//! from there on later runs).
//!
//! The sessions (`ctxfold_testkit::agent_session`): Claude Code's of
//! 200,000 lines of a working session's length (`claude_200k`, 145 MB) and
//! of 1,000,000 short lines (`claude_1m_short`, 366 MB), and Codex
//! rollouts of the same shapes (61 MB and 208 MB). `import_*` runs
//! `ctxfold c import FILE` into a fresh workspace each sample; `compact_*`
//! runs `ctxfold compact FILE -t -r --keep-last 10 -o OUT` (old tool
//! outputs and reasoning stripped, the compacted session written as a new
//! one); `export_*` runs `ctxfold c export --output-format FORMAT -o OUT`
//! of the session imported once into a workspace beforehand (not measured).

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{LazyLock, Mutex};

use ctxfold_testkit::agent_session::{self, Size};

fn main() {
    divan::main();
    report();
}

/// Peak resident memory of every run, by benchmark: (bytes, file size).
static PEAKS: Mutex<Vec<(&'static str, u64, u64)>> = Mutex::new(Vec::new());

fn report() {
    let peaks = PEAKS.lock().unwrap();
    if peaks.is_empty() {
        return;
    }
    println!("\npeak resident memory of each run (the child's ru_maxrss), / the file's size:");
    let mut names: Vec<&str> = peaks.iter().map(|p| p.0).collect();
    names.dedup();
    for name in names {
        let runs: Vec<_> = peaks.iter().filter(|p| p.0 == name).collect();
        let file = runs[0].2;
        let ratios: Vec<String> = runs
            .iter()
            .map(|p| format!("{:.2}", p.1 as f64 / file as f64))
            .collect();
        let max = runs.iter().map(|p| p.1).max().unwrap_or(0);
        println!(
            "{name:<26} file {:>7.1} MB  peak max {:>8.1} MB = {:.2}x  (runs: {})",
            file as f64 / 1e6,
            max as f64 / 1e6,
            max as f64 / file as f64,
            ratios.join(" ")
        );
    }
}

/// A generated session file, removed with the benchmark unless kept.
struct Session {
    _temp: Option<tempfile::TempDir>,
    file: PathBuf,
    size: u64,
}

fn session(name: &str, generate: impl FnOnce(&mut std::io::BufWriter<std::fs::File>)) -> Session {
    let (temp, dir) = match std::env::var_os("CTXFOLD_BENCH_KEEP") {
        Some(keep) => (None, PathBuf::from(keep)),
        None => {
            let t = tempfile::tempdir().unwrap();
            let dir = t.path().to_owned();
            (Some(t), dir)
        }
    };
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.jsonl"));
    if !file.exists() {
        let part = dir.join(format!("{name}.jsonl.part"));
        let mut w = std::io::BufWriter::new(std::fs::File::create(&part).unwrap());
        generate(&mut w);
        std::io::Write::flush(&mut w).unwrap();
        drop(w);
        std::fs::rename(&part, &file).unwrap();
    }
    let size = std::fs::metadata(&file).unwrap().len();
    Session {
        _temp: temp,
        file,
        size,
    }
}

static CLAUDE_200K: LazyLock<Session> = LazyLock::new(|| {
    session("claude_200k", |w| {
        agent_session::claude_code(w, 200_000, Size::Typical).unwrap()
    })
});
static CLAUDE_1M_SHORT: LazyLock<Session> = LazyLock::new(|| {
    session("claude_1m_short", |w| {
        agent_session::claude_code(w, 1_000_000, Size::Short).unwrap()
    })
});
static CODEX_200K: LazyLock<Session> = LazyLock::new(|| {
    session("codex_200k", |w| {
        agent_session::codex(w, 200_000, Size::Typical).unwrap()
    })
});
static CODEX_1M_SHORT: LazyLock<Session> = LazyLock::new(|| {
    session("codex_1m_short", |w| {
        agent_session::codex(w, 1_000_000, Size::Short).unwrap()
    })
});

/// Run the binary in `dir` (its own HOME and XDG folders) with `args`;
/// its peak resident memory, in bytes (`ctxfold_testkit::peak`).
fn ctxfold(dir: &Path, args: &[&std::ffi::OsStr]) -> u64 {
    let bin = std::env::var_os("CTXFOLD_BENCH_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_ctxfold").into());
    ctxfold_testkit::peak::run(
        Command::new(bin)
            .current_dir(dir)
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("xdg-data"))
            .env("XDG_CONFIG_HOME", dir.join("xdg-config"))
            .args(args),
    )
    .unwrap()
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    ctxfold_store::Workspace::init(dir.path()).unwrap();
    dir
}

fn import(b: divan::Bencher, name: &'static str, s: &Session) {
    b.with_inputs(workspace).bench_local_values(|dir| {
        let peak = ctxfold(
            dir.path(),
            &["c".as_ref(), "import".as_ref(), s.file.as_os_str()],
        );
        PEAKS.lock().unwrap().push((name, peak, s.size));
        dir
    });
}

fn compact(b: divan::Bencher, name: &'static str, s: &Session) {
    b.with_inputs(workspace).bench_local_values(|dir| {
        let out = dir.path().join("out.jsonl");
        let peak = ctxfold(
            dir.path(),
            &[
                "compact".as_ref(),
                s.file.as_os_str(),
                "-t".as_ref(),
                "-r".as_ref(),
                "--keep-last".as_ref(),
                "10".as_ref(),
                "-o".as_ref(),
                out.as_os_str(),
            ],
        );
        PEAKS.lock().unwrap().push((name, peak, s.size));
        dir
    });
}

/// A workspace the session was imported into (once, not measured), for
/// the export benchmarks.
fn imported(s: &Session) -> tempfile::TempDir {
    let dir = workspace();
    ctxfold(
        dir.path(),
        &["c".as_ref(), "import".as_ref(), s.file.as_os_str()],
    );
    dir
}

static CLAUDE_200K_IMPORTED: LazyLock<tempfile::TempDir> = LazyLock::new(|| imported(&CLAUDE_200K));
static CLAUDE_1M_SHORT_IMPORTED: LazyLock<tempfile::TempDir> =
    LazyLock::new(|| imported(&CLAUDE_1M_SHORT));
static CODEX_200K_IMPORTED: LazyLock<tempfile::TempDir> = LazyLock::new(|| imported(&CODEX_200K));

/// `c export` of the conversation imported into `dir` (the active one), in
/// `format`, to a file; the peak against the session file's size.
fn export(
    b: divan::Bencher,
    name: &'static str,
    s: &Session,
    dir: &tempfile::TempDir,
    format: &str,
) {
    let out = dir.path().join("out.jsonl");
    b.bench_local(|| {
        let peak = ctxfold(
            dir.path(),
            &[
                "c".as_ref(),
                "export".as_ref(),
                "--output-format".as_ref(),
                format.as_ref(),
                "-o".as_ref(),
                out.as_os_str(),
            ],
        );
        PEAKS.lock().unwrap().push((name, peak, s.size));
    });
}

/// `c export` of the imported 200,000 Claude Code lines, as Claude Code's.
#[divan::bench(sample_count = 3)]
fn export_claude_200k(b: divan::Bencher) {
    export(
        b,
        "export_claude_200k",
        &CLAUDE_200K,
        &CLAUDE_200K_IMPORTED,
        "claude-code",
    );
}

/// `c export` of the imported 1,000,000 short Claude Code lines.
#[divan::bench(sample_count = 3)]
fn export_claude_1m_short(b: divan::Bencher) {
    export(
        b,
        "export_claude_1m_short",
        &CLAUDE_1M_SHORT,
        &CLAUDE_1M_SHORT_IMPORTED,
        "claude-code",
    );
}

/// `c export` of the imported Codex rollout of 200,000 lines, as Codex's.
#[divan::bench(sample_count = 3)]
fn export_codex_200k(b: divan::Bencher) {
    export(
        b,
        "export_codex_200k",
        &CODEX_200K,
        &CODEX_200K_IMPORTED,
        "codex",
    );
}

/// `c import` of 200,000 Claude Code lines (145 MB).
#[divan::bench(sample_count = 3)]
fn import_claude_200k(b: divan::Bencher) {
    import(b, "import_claude_200k", &CLAUDE_200K);
}

/// `c import` of 1,000,000 short Claude Code lines (366 MB).
#[divan::bench(sample_count = 3)]
fn import_claude_1m_short(b: divan::Bencher) {
    import(b, "import_claude_1m_short", &CLAUDE_1M_SHORT);
}

/// `compact FILE` of 200,000 Claude Code lines.
#[divan::bench(sample_count = 3)]
fn compact_claude_200k(b: divan::Bencher) {
    compact(b, "compact_claude_200k", &CLAUDE_200K);
}

/// `compact FILE` of 1,000,000 short Claude Code lines.
#[divan::bench(sample_count = 3)]
fn compact_claude_1m_short(b: divan::Bencher) {
    compact(b, "compact_claude_1m_short", &CLAUDE_1M_SHORT);
}

/// `c import` of a Codex rollout of 200,000 lines.
#[divan::bench(sample_count = 3)]
fn import_codex_200k(b: divan::Bencher) {
    import(b, "import_codex_200k", &CODEX_200K);
}

/// `c import` of a Codex rollout of 1,000,000 short lines.
#[divan::bench(sample_count = 3)]
fn import_codex_1m_short(b: divan::Bencher) {
    import(b, "import_codex_1m_short", &CODEX_1M_SHORT);
}

/// `compact FILE` of a Codex rollout of 200,000 lines.
#[divan::bench(sample_count = 3)]
fn compact_codex_200k(b: divan::Bencher) {
    compact(b, "compact_codex_200k", &CODEX_200K);
}

/// `compact FILE` of a Codex rollout of 1,000,000 short lines.
#[divan::bench(sample_count = 3)]
fn compact_codex_1m_short(b: divan::Bencher) {
    compact(b, "compact_codex_1m_short", &CODEX_1M_SHORT);
}
