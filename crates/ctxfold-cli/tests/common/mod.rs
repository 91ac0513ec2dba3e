//! Runs the real `ctxfold` binary in a scratch workspace.
#![allow(dead_code)]

pub mod agent_proxy;
pub mod agent_run;
pub mod browser;
pub mod model;
pub mod provider;
pub mod proxy;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_ctxfold");

/// A temporary folder with a `.ctxfold/` workspace, isolated from the
/// user's own (HOME and XDG folders point inside it).
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        let s = Scratch {
            dir: tempfile::tempdir().unwrap(),
        };
        let out = s.run(&["init"]);
        assert!(out.status.success(), "init failed: {}", stderr(&out));
        s
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn command(&self) -> Command {
        command_in(self.dir.path())
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// Run, require success, return stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "ctxfold {args:?} failed: {}",
            stderr(&out)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Run with `--format json`, require success, parse stdout.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut a = args.to_vec();
        a.push("--format");
        a.push("json");
        serde_json::from_str(&self.ok(&a)).unwrap()
    }

    /// `conversation append ID --format json EXTRA…` with `lines` (JSONL
    /// records) on standard input; require success, parse stdout.
    pub fn append_json(&self, id: &str, lines: &str, extra: &[&str]) -> serde_json::Value {
        use std::io::Write;
        use std::process::Stdio;
        let mut child = self
            .command()
            .args(["c", "append", id, "--format", "json"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(lines.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Import a transcript, return the new conversation's id.
    pub fn import(&self, path: &Path) -> String {
        let v = self.json(&["conversation", "import", path.to_str().unwrap()]);
        v["id"].as_str().unwrap().to_owned()
    }

    /// The conversation's log file.
    pub fn events_file(&self, id: &str) -> PathBuf {
        self.path()
            .join(".ctxfold/conversations")
            .join(id)
            .join("events.jsonl")
    }
}

/// `ctxfold` run in `dir`, with HOME and the XDG folders inside it.
pub fn command_in(dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("xdg-data"))
        .env("XDG_CONFIG_HOME", dir.join("xdg-config"));
    c
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Run `tests/sdk/SCRIPT` with `args`, under the Python that has the
/// official SDKs (`CTXFOLD_SDK_PYTHON`, which `scripts/proxy-clients env`
/// sets): the JSON lines it printed. The test fails, with the script's
/// standard error and what it printed, when the script does.
pub fn sdk_script(script: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let python = std::env::var("CTXFOLD_SDK_PYTHON")
        .expect("CTXFOLD_SDK_PYTHON: the Python with the SDKs (scripts/proxy-clients env)");
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk")
        .join(script);
    let out = Command::new(python).arg(&path).args(args).output().unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed after printing {printed}: {}",
        stderr(&out)
    );
    printed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{script} printed {l:?}: {e}")))
        .collect()
}

// Not every test binary that includes this module reads the corpus.
#[allow(unused_imports)]
pub use ctxfold_testkit::corpus::dir as corpus;

pub fn corpus_conversations() -> Vec<PathBuf> {
    let dirs = ctxfold_testkit::corpus::conversations();
    assert_eq!(dirs.len(), 15);
    dirs
}

/// Reads one HTTP/1.1 request from a fake server's connection: its request
/// line (such as `POST /v1/chat/completions HTTP/1.1`) and its body, by
/// content-length. None when the client closed before sending a line.
pub fn read_request(stream: &std::net::TcpStream) -> Option<(String, Vec<u8>)> {
    use std::io::{BufRead, BufReader, Read};
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
        if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    Some((line, body))
}

/// `ctxfold compact DIR -o OUT --format json` with `args`, OUT inside the
/// scratch folder; the parsed report.
pub fn compact_report(s: &Scratch, dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = s.path().join("out").join(dir.file_name().unwrap());
    let mut a = vec![
        "compact",
        dir.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(args);
    s.json(&a)
}

/// The records of conversation `id` as `c print --format json` prints
/// them.
pub fn records(s: &Scratch, id: &str) -> Vec<serde_json::Value> {
    records_in(s, &[], id)
}

/// The records of `id` in the store `store` names (`--store URL`).
pub fn records_in(s: &Scratch, store: &[&str], id: &str) -> Vec<serde_json::Value> {
    s.json(&[store, &["c", "print", id]].concat())
        .as_array()
        .unwrap()
        .clone()
}

/// The records once `done` holds of them (an answer is recorded after
/// its last byte went to the client, so a test that looks at once may be
/// early), or as they are after five seconds.
pub fn records_when(
    s: &Scratch,
    id: &str,
    done: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    records_when_in(s, &[], id, done)
}

/// [`records_when`] in the store `store` names.
pub fn records_when_in(
    s: &Scratch,
    store: &[&str],
    id: &str,
    done: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    for _ in 0..100 {
        let r = records_in(s, store, id);
        if done(&r) {
            return r;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    records_in(s, store, id)
}
