//! `ctxfold proxy` run as a process in a scratch workspace, on a free
//! port, killed when dropped (its log shown when a test fails).

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

use super::Scratch;

/// A running proxy.
pub struct Proxy {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// What it wrote on standard error, line by line.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    /// Write `config` into the workspace's config and start the proxy.
    pub fn start(s: &Scratch, config: &str) -> Proxy {
        std::fs::write(s.path().join(".ctxfold/config.toml"), config).unwrap();
        let mut child = s
            .command()
            .args(["proxy", "--listen", "127.0.0.1:0"])
            .env(
                "RUST_LOG",
                std::env::var("PROXY_LOG").unwrap_or("info".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(base) = line.trim().strip_prefix("ctxfold proxy listening on ") else {
            let mut said = String::new();
            let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said);
            panic!("the proxy did not start: {said}");
        };
        let base = base.to_owned();
        // Keep reading its log so it never blocks on a full pipe.
        let err = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = log.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(l);
            }
        });
        Proxy { child, base, log }
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
