//! `ctxfold proxy` (or `ctxfold ui`) run as a process in a scratch
//! workspace, on a free port, killed when dropped (its log shown when a
//! test fails): the one runner every test that serves starts it with.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

use super::Scratch;

/// A running proxy.
pub struct Proxy {
    /// The process (tests send it signals).
    pub child: Child,
    /// `http://127.0.0.1:PORT` (loopback also when it listens on every
    /// address).
    pub base: String,
    /// What it wrote on standard error, line by line.
    pub log: Arc<Mutex<Vec<String>>>,
}

/// How to start it besides its config.
pub struct Options<'a> {
    /// `--listen`.
    pub listen: &'a str,
    /// More arguments after `proxy --listen ADDR`.
    pub args: &'a [&'a str],
    /// `RUST_LOG`.
    pub level: &'a str,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            listen: "127.0.0.1:0",
            args: &[],
            level: "info",
        }
    }
}

impl Proxy {
    /// Write `config` into the workspace's config and start the proxy,
    /// logging at `PROXY_LOG` (default `info`).
    pub fn start(s: &Scratch, config: &str) -> Proxy {
        let level = std::env::var("PROXY_LOG").unwrap_or("info".into());
        Proxy::start_with(
            s,
            config,
            Options {
                level: &level,
                ..Options::default()
            },
        )
    }

    /// [`Proxy::start`] with `options`.
    pub fn start_with(s: &Scratch, config: &str, options: Options) -> Proxy {
        std::fs::write(s.path().join(".ctxfold/config.toml"), config).unwrap();
        Proxy::serve(s, &["proxy"], options)
    }

    /// Start `ctxfold COMMAND --listen ADDR ARGS` (the proxy, or `ui`) in
    /// `s` and read the address it prints (`… listening on
    /// http://ADDR[/]`).
    pub fn serve(s: &Scratch, command: &[&str], options: Options) -> Proxy {
        let mut child = s
            .command()
            .args(command)
            .args(["--listen", options.listen])
            .args(options.args)
            .env("RUST_LOG", options.level)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some((_, bound)) = line.trim().split_once(" listening on http://") else {
            let mut said = String::new();
            let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said);
            panic!("{command:?} did not start: {line:?} {said}");
        };
        // On every address (0.0.0.0) it is reached on loopback.
        let port = bound.trim_end_matches('/').rsplit_once(':').unwrap().1;
        let base = format!("http://127.0.0.1:{port}");
        // Keep reading its log so it never blocks on a full pipe.
        let err = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = log.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                lines.lock().unwrap_or_else(|e| e.into_inner()).push(l);
            }
        });
        Proxy { child, base, log }
    }

    /// `http://127.0.0.1:PORT` and `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// What it logged so far.
    pub fn logged(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Proxy {
    /// Send it SIGTERM and wait for it to end (at most 10 s, else the
    /// test fails): its exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let term = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(term.success());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{} did not stop within 10 s of SIGTERM",
                self.base
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
            eprintln!("proxy {} said:\n{}", self.base, log.join("\n"));
        }
    }
}
