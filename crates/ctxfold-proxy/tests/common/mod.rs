//! The proxy in the test's own process, over real HTTP: config as
//! `ctxfold proxy` reads it (a TOML text: `[proxy]`, `[compaction.auto]`,
//! `[tools]`, `[prices]`), a real workspace store in a folder of the
//! test's own, `serve` on a tokio runtime in a thread of its own, stopped
//! gracefully when dropped. Records are read back from the store as
//! `ctxfold c print --format json` prints them. Summaries are the offline
//! digest's (a model summarizer needs the command line's settings: those
//! tests stay in ctxfold-cli).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use ctxfold_compactor::DigestOnly;
use ctxfold_proxy::server::Proxy;
use ctxfold_proxy::{Book, Compaction, ProxyConfig};
use ctxfold_store::{Store, Workspace};
use ctxfold_testkit::upstream::Upstream;
use serde_json::Value;

/// A proxy serving on 127.0.0.1 (or every address) until dropped.
pub struct InProcess {
    /// `http://127.0.0.1:PORT` (loopback also when it listens on every
    /// address).
    pub base: String,
    /// The store it records in.
    pub store: Arc<dyn Store>,
    /// The folder holding the workspace (`.ctxfold/`) and the config.
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl InProcess {
    /// The proxy on `127.0.0.1:0` with `config` (TOML, as in
    /// `.ctxfold/config.toml`).
    pub fn start(config: &str) -> InProcess {
        InProcess::start_on(config, "127.0.0.1:0")
    }

    /// [`InProcess::start`] listening on `listen`.
    pub fn start_on(config: &str, listen: &str) -> InProcess {
        InProcess::start_with(config, listen, false)
    }

    /// [`InProcess::start_on`], only recording when `observe` (what
    /// `ctxfold proxy --observe` sets).
    pub fn start_with(config: &str, listen: &str, observe: bool) -> InProcess {
        let dir = tempfile::tempdir().unwrap();
        let (ws, _) = Workspace::init(dir.path()).unwrap();
        let store: Arc<dyn Store> = Arc::new(ws);
        let file = dir.path().join("config.toml");
        std::fs::write(&file, config).unwrap();
        let loaded = ctxfold_config::load(&ctxfold_config::Layers {
            files: vec![file],
            ..ctxfold_config::Layers::default()
        })
        .unwrap();
        let other = &loaded.config.other;
        let prices = ctxfold_config::price_table(other.get("prices")).unwrap();
        let mut proxy_config = match other.get("proxy") {
            Some(v) => ProxyConfig::default()
                .apply(v)
                .unwrap_or_else(|e| panic!("[proxy]: {e:?}")),
            None => ProxyConfig::default(),
        }
        .with_prices(prices);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(listen))
            .unwrap();
        let bound: SocketAddr = listener.local_addr().unwrap();
        proxy_config.listen = bound;
        proxy_config.observe = observe;
        proxy_config.check_listen().unwrap();
        // As `ctxfold proxy`: automatic compaction on unless config says.
        let mut policy = loaded.config.auto.clone();
        if !loaded
            .origin("compaction.auto.enabled")
            .is_some_and(|s| !matches!(s, ctxfold_config::Source::Builtin))
        {
            policy.enabled = true;
        }
        let compaction = Compaction {
            policy,
            hints: loaded.config.hints.clone(),
            summarizers: Arc::new(|| Box::new(DigestOnly)),
            window: proxy_config.window,
            observe: proxy_config.observe,
            emulate: proxy_config.emulate,
        };
        let book = Book::open_with(store.clone(), compaction, proxy_config.cache).unwrap();
        let proxy = Arc::new(Proxy::new(book, proxy_config).unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            runtime.block_on(ctxfold_proxy::serve(listener, proxy, async move {
                let _ = stopped.await;
            }))
        });
        InProcess {
            base: format!("http://127.0.0.1:{}", bound.port()),
            store,
            dir,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT` and `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// The records of `id`, as `c print --format json` prints them.
    pub fn records(&self, id: &str) -> Vec<Value> {
        ctxfold_testkit::records::printed(self.store.as_ref(), id)
    }

    /// [`InProcess::records`] once `done` holds of them (or as they are
    /// after five seconds).
    pub fn records_when(&self, id: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        ctxfold_testkit::records::printed_when(self.store.as_ref(), id, done)
    }

    /// The conversations in the store (as `c ls` lists them).
    pub fn conversations(&self) -> usize {
        self.store.list().unwrap().conversations.len()
    }

    /// Stop it and wait for it to stop: what `serve` ended with.
    pub fn shut_down(&mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(t) => t.join().unwrap(),
            None => Ok(()),
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Not joined: a test that fails may leave a connection open that
        // the graceful shutdown would wait for.
    }
}

/// `[proxy]` config sending every API to `up`, with `extra` after it.
pub fn config(up: &Upstream, extra: &str) -> String {
    format!(
        "[proxy]\nopenai = \"{b}\"\nanthropic = \"{b}\"\ngemini = \"{b}\"\n{extra}\n",
        b = up.base
    )
}

/// The proxy's `/metrics` text.
pub fn metrics(p: &InProcess) -> String {
    ctxfold_testkit::client::get(&p.url("/metrics")).text()
}
