//! `ctxfold ui`: the settings, the runtime and the listening socket for the
//! browser pages; everything else is `ctxfold-ui`.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;

use crate::cli::UiArgs;
use crate::context::Context;

/// Where the pages listen unless told: loopback, next to the proxy's port.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::LOCALHOST,
    7441,
));

/// Serve the pages over the store until Ctrl-C or SIGTERM. A server, not
/// a report: it prints its address when it listens (one line on standard
/// output, which scripts read), serves, and ends with nothing to report.
pub fn run(ctx: &Context, args: UiArgs) -> anyhow::Result<()> {
    let settings = ctx.settings()?;
    let target = ctx.target()?;
    let listen: SocketAddr = match args.listen {
        Some(a) => a,
        None => DEFAULT_LISTEN,
    };
    // The proxy's rule and token: the pages change conversations (undo,
    // restore) and show everything an agent said.
    let token = settings.proxy.token.clone();
    if !listen.ip().is_loopback() && token.is_none() {
        anyhow::bail!(
            "refusing to listen on {listen} without a token: set [proxy] token (the pages ask for it once), or listen on 127.0.0.1"
        );
    }
    let has_token = token.is_some();
    let place = target.store.location();
    let ui = Arc::new(
        ctxfold_ui::Ui::new(target.store, token, "", settings.proxy.window)
            .with_prices(settings.prices.clone()),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the pages' runtime")?;
    rt.block_on(async move {
        let stop = crate::shutdown::shutdown();
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("listening on {listen}"))?;
        let addr = listener.local_addr()?;
        // One line on standard output: scripts (and the tests) read the
        // address from it when they asked for port 0.
        // A closed or full standard output stops no server.
        let _ = crate::render::to_stdout(format!("ctxfold ui listening on http://{addr}/\n").as_bytes());
        crate::render::say!(
            "  conversations of {place}{}",
            if has_token {
                "\n  open http://ADDR/?token=TOKEN once ([proxy] token); the browser keeps it in a cookie"
                    .replace("ADDR", &addr.to_string())
            } else {
                String::new()
            }
        );
        let pages = Arc::clone(&ui);
        axum::serve(listener, ctxfold_ui::router(ui))
            .with_graceful_shutdown(async move {
                stop.await;
                // Open pages' live streams would hold the shutdown up.
                pages.close();
            })
            .await
            .context("serving")
    })
}
