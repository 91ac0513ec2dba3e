//! A real headless Chromium driven over WebDriver (chromedriver, with
//! fantoccini), for the browser pages' tests. Debian's `chromium` and
//! `chromium-driver`; `scripts/browser` installs them and `scripts/test`
//! exports where they are.
//!
//! Where: `CTXFOLD_TEST_CHROMIUM` (else /usr/bin/chromium) and
//! `CTXFOLD_TEST_CHROMEDRIVER` (else /usr/bin/chromedriver). Missing: under
//! `scripts/test` and in CI, or when a variable names a program that is not
//! there, the test fails; elsewhere it is skipped with a message
//! (`ctxfold_testkit::needs`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

/// A browser session, and the chromedriver behind it.
pub struct Browser {
    rt: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Child,
    _profile: tempfile::TempDir,
    /// Where screenshots go.
    pub shots: PathBuf,
}

/// The program `var` names, else `default` when it is there. A variable
/// naming nothing is a mistake, not a reason to skip.
fn found(var: &str, default: &str) -> Option<PathBuf> {
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(
                p.is_file(),
                "{var} names {}, which is not there",
                p.display()
            );
            Some(p)
        }
        None => Some(PathBuf::from(default)).filter(|p| p.is_file()),
    }
}

/// Start a browser, or `None` (with a message) when none is installed and
/// missing parts may be skipped (see `ctxfold_testkit::needs`).
pub fn browser() -> Option<Browser> {
    let chromium = found("CTXFOLD_TEST_CHROMIUM", "/usr/bin/chromium");
    let driver = found("CTXFOLD_TEST_CHROMEDRIVER", "/usr/bin/chromedriver");
    let (Some(chromium), Some(driver)) = (chromium, driver) else {
        let msg = "no Chromium and ChromeDriver (run scripts/browser, or set CTXFOLD_TEST_CHROMIUM and CTXFOLD_TEST_CHROMEDRIVER)";
        ctxfold_testkit::needs::missing("browser test", msg);
        return None;
    };
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let driver = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let profile = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut caps = serde_json::Map::new();
    // The flags that keep Chromium off the (closed) network and quick.
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1280,1500",
                format!("--user-data-dir={}", profile.path().display()),
            ],
        }),
    );
    let url = format!("http://127.0.0.1:{port}");
    let client = rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let attempt =
                ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                    .capabilities(caps.clone())
                    .connect(&url)
                    .await;
            match attempt {
                Ok(c) => break c,
                Err(e) if Instant::now() > deadline => panic!("no browser session: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    });
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    Some(Browser {
        rt,
        client: Some(client),
        driver,
        _profile: profile,
        shots,
    })
}

impl Browser {
    fn c(&self) -> &Client {
        self.client.as_ref().unwrap()
    }

    /// Open `url`.
    pub fn goto(&self, url: &str) {
        self.rt.block_on(self.c().goto(url)).unwrap();
    }

    /// The current address.
    pub fn url(&self) -> String {
        self.rt
            .block_on(self.c().current_url())
            .unwrap()
            .to_string()
    }

    /// The text of the first element matching `css`.
    pub fn text(&self, css: &str) -> String {
        self.settled(css, |c| async move {
            c.find(Locator::Css(css)).await?.text().await
        })
    }

    /// An attribute of the first element matching `css`.
    pub fn attr(&self, css: &str, name: &str) -> Option<String> {
        self.settled(css, |c| async move {
            c.find(Locator::Css(css)).await?.attr(name).await
        })
    }

    /// `read` of an element, found again when a live update replaced it
    /// between finding and reading (a stale element).
    fn settled<'a, T, F>(&'a self, css: &str, read: impl Fn(&'a Client) -> F) -> T
    where
        F: std::future::Future<Output = Result<T, fantoccini::error::CmdError>>,
    {
        let mut tries = 0;
        loop {
            match self.rt.block_on(read(self.c())) {
                Ok(v) => return v,
                Err(e) if tries < 5 && e.to_string().contains("stale element") => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => panic!("{css}: {e}"),
            }
        }
    }

    /// An attribute of every element matching `css`.
    pub fn attrs(&self, css: &str, name: &str) -> Vec<Option<String>> {
        self.rt
            .block_on(async {
                let mut out = Vec::new();
                for e in self.c().find_all(Locator::Css(css)).await? {
                    out.push(e.attr(name).await?);
                }
                Ok::<_, fantoccini::error::CmdError>(out)
            })
            .unwrap()
    }

    /// How many elements match `css`.
    pub fn count(&self, css: &str) -> usize {
        self.rt
            .block_on(self.c().find_all(Locator::Css(css)))
            .unwrap()
            .len()
    }

    /// Click the first element matching `css`.
    pub fn click(&self, css: &str) {
        self.rt
            .block_on(async { self.c().find(Locator::Css(css)).await?.click().await })
            .unwrap_or_else(|e| panic!("{css}: {e}"));
    }

    /// Type `text` into the first element matching `css`.
    pub fn type_into(&self, css: &str, text: &str) {
        self.rt
            .block_on(async {
                self.c()
                    .find(Locator::Css(css))
                    .await?
                    .send_keys(text)
                    .await
            })
            .unwrap_or_else(|e| panic!("{css}: {e}"));
    }

    /// Run `script` in the page and return what it returns.
    pub fn run(&self, script: &str) -> serde_json::Value {
        self.rt.block_on(self.c().execute(script, vec![])).unwrap()
    }

    /// Save a screenshot of the page as `name`.png, for a person to look
    /// at; returns its path.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.rt.block_on(self.c().screenshot()).unwrap();
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot: {}", path.display());
        path
    }

    /// Wait up to `secs` seconds for `cond`; panics naming `what`.
    pub fn wait_for(&self, what: &str, secs: u64, mut cond: impl FnMut(&Browser) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !cond(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            let _ = self.rt.block_on(c.close());
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
