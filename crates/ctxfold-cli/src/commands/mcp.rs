//! `ctxfold mcp`: the store, the scope and the runtime for the MCP server;
//! everything else is `ctxfold-mcp`.

use anyhow::Context as _;

use crate::cli::McpArgs;
use crate::context::Context;

/// Serve `recall` and `search` on standard input and output until the
/// input closes. A server, not a report: standard output is the protocol,
/// so nothing else is printed there (logs go to standard error).
pub fn run(ctx: &Context, args: McpArgs) -> anyhow::Result<()> {
    let target = ctx.target()?;
    let scope = match &args.conversation {
        Some(id) => Some(target.store.find(id)?.id),
        None => None,
    };
    tracing::info!(
        "ctxfold mcp: recall and search over {}{}",
        target.store.location(),
        scope
            .as_deref()
            .map(|id| format!(", conversation {id} only"))
            .unwrap_or_default()
    );
    let recaller = ctxfold_recall::Recaller::new(target.store, scope);
    let server = ctxfold_mcp::RecallServer::new(recaller);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the MCP server's runtime")?;
    // The store is let go of here, after the runtime: PostgreSQL's
    // synchronous client closes its connections with a runtime of its own,
    // which cannot start inside another.
    let keep = server.clone();
    let served = rt.block_on(ctxfold_mcp::serve_stdio(server));
    // A read of standard input may still be waiting on the blocking pool
    // when the session ends otherwise than by the input closing.
    rt.shutdown_background();
    drop(keep);
    served.context("serving MCP on standard input and output")
}
