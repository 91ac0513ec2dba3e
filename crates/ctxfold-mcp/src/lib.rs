//! `ctxfold mcp` (SPEC §16): recall and search served over the Model
//! Context Protocol, on stdio, to the agents people run, with the official
//! Rust SDK (`rmcp`). Two tools, `recall` and `search` ([`tools`]), over
//! any store through [`ctxfold_recall::Recaller`], whose blocking store
//! reads run on tokio's blocking pool.
//!
//! Every failure of a tool (a handle that cannot be read, one of another
//! conversation, an offset past the end, a store that cannot be read) is
//! a tool result with `isError` set and a message the model can act on,
//! never a protocol error. The server ends when its input closes; it
//! writes the protocol to standard output and nothing else.

pub mod tools;

use std::sync::Arc;

use ctxfold_recall::Recaller;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{QuitReason, RequestContext, ServerInitializeError};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use tokio::io::{AsyncRead, AsyncWrite};

/// What the server tells the client about itself when it starts.
const INSTRUCTIONS: &str = "ctxfold folds old parts of this conversation out of view; every fold shows a handle such as `recall k3f9q:41`. Call `recall` with that handle to read the folded content exactly (in pages: pass the offset the last line of a page gives), and `search` to find text anywhere in the conversation, folded parts included.";

/// The MCP server: the two tools over one [`Recaller`].
#[derive(Debug, Clone)]
pub struct RecallServer {
    recaller: Arc<Recaller>,
}

impl RecallServer {
    /// A server answering from `recaller` (scoped to one conversation or
    /// not, as it was made).
    pub fn new(recaller: Recaller) -> RecallServer {
        RecallServer {
            recaller: Arc::new(recaller),
        }
    }

    /// Run one tool call on the blocking pool: its text, or the message
    /// of what went wrong.
    async fn run(&self, name: String, args: rmcp::model::JsonObject) -> Result<String, String> {
        let recaller = Arc::clone(&self.recaller);
        let tool = name.clone();
        match tokio::task::spawn_blocking(move || tools::call(&recaller, &name, &args)).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::error!("the {tool} tool failed: {e}");
                Err(format!(
                    "the {tool} tool failed inside ctxfold ({e}); try again, or go on without it"
                ))
            }
        }
    }
}

impl ServerHandler for RecallServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ctxfold", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::list(
            self.recaller.scope().is_some(),
        )))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.into_owned();
        let args = request.arguments.unwrap_or_default();
        let result = match self.run(name.clone(), args).await {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(message) => {
                tracing::info!("{name}: {message}");
                CallToolResult::error(vec![ContentBlock::text(message)])
            }
        };
        Ok(result.into())
    }
}

/// Why the server stopped other than by its input closing.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The protocol could not start (the client's first message was not
    /// `initialize`, or the output could not be written).
    #[error("the MCP session could not start: {0}")]
    Start(#[source] Box<ServerInitializeError>),
    /// The server's task ended abnormally.
    #[error("the MCP server stopped: {0}")]
    Stopped(#[source] tokio::task::JoinError),
}

/// Serve `server` over `input` and `output` until the input closes (or
/// the client ends the session). An input that closes before the session
/// starts ends it too, without an error.
pub async fn serve<R, W>(server: RecallServer, input: R, output: W) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let running = match server.serve((input, output)).await {
        Ok(r) => r,
        Err(ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled) => {
            return Ok(());
        }
        Err(e) => return Err(ServeError::Start(Box::new(e))),
    };
    match running.waiting().await {
        Ok(QuitReason::JoinError(e)) | Err(e) => Err(ServeError::Stopped(e)),
        // Closed or cancelled: the client is done.
        Ok(_) => Ok(()),
    }
}

/// Serve `server` on standard input and output: what an agent starts
/// `ctxfold mcp` for.
pub async fn serve_stdio(server: RecallServer) -> Result<(), ServeError> {
    let (input, output) = rmcp::transport::stdio();
    serve(server, input, output).await
}
