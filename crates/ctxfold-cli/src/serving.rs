//! The proxy set up over the command's store, with `[proxy]` and
//! automatic compaction as config says: what `ctxfold proxy` serves and
//! what `ctxfold run` puts in front of an agent.

use std::sync::Arc;

use anyhow::Context as _;
use ctxfold_proxy::server::Proxy;
use ctxfold_proxy::{Book, Compaction};

use crate::context::Context;

/// A proxy set up over the context's store, not yet listening.
pub struct Built {
    /// The proxy.
    pub proxy: Arc<Proxy>,
    /// Its `[proxy]` settings, with the command's changes.
    pub config: ctxfold_proxy::config::ProxyConfig,
    /// Where it records, as messages show it.
    pub place: String,
}

/// The proxy over the context's store, with `[proxy]` and automatic
/// compaction as config says, listening on `listen` (else config's) once
/// served, sending requests on unchanged when `observe`; `upstreams`
/// (OpenAI, Anthropic) in place of config's when given.
pub fn build(
    ctx: &Context,
    listen: Option<std::net::SocketAddr>,
    observe: bool,
    upstreams: (Option<String>, Option<String>),
) -> anyhow::Result<Built> {
    let settings = ctx.settings()?;
    let target = ctx.target()?;
    let mut config = settings.proxy.clone();
    if let Some(a) = listen {
        config.listen = a;
    }
    if let Some(u) = upstreams.0 {
        config.openai = u;
    }
    if let Some(u) = upstreams.1 {
        config.anthropic = u;
    }
    config.observe = observe;
    config.check_listen().map_err(anyhow::Error::msg)?;
    let mut policy = settings.auto.clone();
    // The proxy is there to compact: on unless config says otherwise.
    if !settings.auto_enabled_set {
        policy.enabled = true;
    }
    let summarizing = settings.clone();
    let compaction = Compaction {
        policy,
        hints: settings.hints.clone(),
        summarizers: Arc::new(move || {
            Box::new(crate::summarizers::CliSummarizers::new(summarizing.clone()))
        }),
        window: config.window,
        observe: config.observe,
        emulate: config.emulate,
    };
    if let Some(ws) = &target.workspace {
        for note in ws.clean_staging() {
            tracing::info!("{note}");
        }
    }
    let place = target.store.location();
    let book = Book::open_with(target.store, compaction, config.cache)
        .with_context(|| format!("reading the conversations of {place}"))?;
    let proxy = Arc::new(Proxy::new(book, config.clone()).map_err(anyhow::Error::msg)?);
    Ok(Built {
        proxy,
        config,
        place,
    })
}
