//! `ctxfold proxy`: the settings, the runtime, and the listening socket;
//! everything else is `ctxfold-proxy`.

use std::sync::Arc;

use crate::cli::ProxyArgs;
use crate::context::Context;
use anyhow::Context as _;
use ctxfold_proxy::server::Proxy;
use ctxfold_proxy::{Book, Compaction};

/// Run the proxy on the store until Ctrl-C or SIGTERM. A server, not a
/// report: it prints its address when it listens (one line on standard
/// output, which scripts read), serves, and ends with nothing to report.
pub fn run(ctx: &Context, args: ProxyArgs) -> anyhow::Result<()> {
    let settings = ctx.settings()?;
    let target = ctx.target()?;
    let mut config = settings.proxy.clone();
    if let Some(a) = args.listen {
        config.listen = a;
    }
    config.observe = args.observe;
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the proxy's runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("listening on {}", config.listen))?;
        let addr = listener.local_addr()?;
        // One line on standard output: scripts (and the tests) read the
        // address from it when they asked for port 0.
        // A closed or full standard output stops no server.
        let _ = crate::render::to_stdout(format!("ctxfold proxy listening on http://{addr}\n").as_bytes());
        crate::render::say!(
            "  OpenAI clients: base URL http://{addr}/v1 → {}\n  Anthropic clients: base URL http://{addr} → {}\n  conversations recorded in {}{}\n  pages: http://{addr}/ui{}",
            config.openai,
            config.anthropic,
            place,
            if config.observe {
                " (observe: requests go upstream unchanged)"
            } else {
                ""
            },
            if config.token.is_some() {
                "?token=TOKEN ([proxy] token; once, the browser keeps it)"
            } else {
                ""
            }
        );
        ctxfold_proxy::serve(listener, proxy, crate::shutdown::shutdown())
            .await
            .context("serving")
    })
}
