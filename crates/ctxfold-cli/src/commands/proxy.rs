//! `ctxfold proxy`: the runtime and the listening socket; the proxy is
//! set up in `serving`, everything else is `ctxfold-proxy`.

use crate::cli::ProxyArgs;
use crate::context::Context;
use anyhow::Context as _;

/// Run the proxy on the store until Ctrl-C or SIGTERM. A server, not a
/// report: it prints its address when it listens (one line on standard
/// output, which scripts read), serves, and ends with nothing to report.
pub fn run(ctx: &Context, args: ProxyArgs) -> anyhow::Result<()> {
    let crate::serving::Built {
        proxy,
        config,
        place,
    } = crate::serving::build(ctx, args.listen, args.observe, (None, None))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the proxy's runtime")?;
    rt.block_on(async move {
        let stop = crate::shutdown::shutdown();
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("listening on {}", config.listen))?;
        let addr = listener.local_addr()?;
        // One line on standard output: scripts (and the tests) read the
        // address from it when they asked for port 0.
        // A closed or full standard output stops no server.
        let _ = crate::render::to_stdout(format!("ctxfold proxy listening on http://{addr}\n").as_bytes());
        crate::render::say!(
            "  OpenAI clients: base URL http://{addr}/v1 → {}\n  Anthropic clients: base URL http://{addr} → {}\n  Gemini clients: base URL http://{addr} → {}\n  conversations recorded in {}{}\n  pages: http://{addr}/ui{}",
            config.openai,
            config.anthropic,
            config.gemini,
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
        ctxfold_proxy::serve(listener, proxy, stop)
            .await
            .context("serving")
    })
}
