//! The MCP handler: one [`McpServer`] per connection, its session opened
//! at once (stdio) or by the first tool call (HTTP), calls relayed to the
//! component with progress and cancellation.

use super::catalog::{Catalog, StatelessTools};
use super::content::tool_result;
use super::error::McpError;
use e2b_tools_host::{failure_result, Session, SessionError};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::sync::Arc;

/// An MCP server handler over one session.
#[derive(Clone)]
pub struct McpServer {
    pub(super) session: Arc<SessionSlot>,
    catalog: Catalog,
    stateless: Option<StatelessTools>,
    /// Whether the end of the connection kills a sandbox the session
    /// attached to, not only the ones it made.
    pub(super) kill_attached: bool,
}

/// How long the end of an HTTP connection may take to kill its sandboxes.
const KILL_WITHIN: std::time::Duration = std::time::Duration::from_secs(4);

/// Opens a connection's session when its first tool call comes.
pub type SessionOpener = Arc<
    dyn Fn() -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<Session, SessionError>> + Send>,
        > + Send
        + Sync,
>;

/// A connection's session: open from the start (stdio), or opened by its
/// first tool call (HTTP, where most connections may never call one). When
/// the last handle goes, an opened session's sandboxes are killed on
/// `cleanup` (a call still running is cancelled first).
pub(crate) struct SessionSlot {
    pub(super) cell: tokio::sync::OnceCell<Arc<Session>>,
    opener: Option<SessionOpener>,
    cleanup: Option<tokio_util::task::TaskTracker>,
    /// Whatever must live as long as the connection.
    _held: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl SessionSlot {
    async fn get(&self) -> Result<&Arc<Session>, SessionError> {
        if let Some(session) = self.cell.get() {
            return Ok(session);
        }
        let open = self
            .opener
            .as_ref()
            .expect("a slot without an opener is made with its session");
        self.cell
            .get_or_try_init(|| async { open().await.map(Arc::new) })
            .await
    }
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        let (Some(session), Some(tracker)) = (self.cell.take(), self.cleanup.as_ref()) else {
            return;
        };
        tracker.spawn(async move {
            // A failure is an error event in the library's audit trail.
            session.kill_owned(KILL_WITHIN).await;
        });
    }
}

impl McpServer {
    /// Serves `session`, reading the catalog and the instructions from its
    /// component.
    pub async fn new(session: Session) -> Result<Self, McpError> {
        let catalog = Catalog::read(&session).await?;
        let slot = SessionSlot {
            cell: tokio::sync::OnceCell::new_with(Some(Arc::new(session))),
            opener: None,
            cleanup: None,
            _held: None,
        };
        Ok(Self {
            session: Arc::new(slot),
            catalog,
            stateless: None,
            kill_attached: false,
        })
    }

    /// Serves the session `open` makes on the first tool call (from a
    /// warm pool), with `catalog` (read from any session of the same
    /// options); the connection's end shuts it down.
    pub fn opened_by(catalog: Catalog, open: SessionOpener) -> Self {
        let slot = SessionSlot {
            cell: tokio::sync::OnceCell::new(),
            opener: Some(open),
            cleanup: None,
            _held: None,
        };
        Self {
            session: Arc::new(slot),
            catalog,
            stateless: None,
            kill_attached: false,
        }
    }

    /// A connection whose session `open` makes on the first tool call,
    /// and `cleanup` shuts down when the connection's handler is dropped;
    /// `held` lives as long as the connection (the HTTP server's place
    /// under its session cap).
    pub(crate) fn lazy(
        catalog: Catalog,
        stateless: StatelessTools,
        open: SessionOpener,
        cleanup: tokio_util::task::TaskTracker,
        held: impl std::any::Any + Send + Sync,
    ) -> Self {
        let slot = SessionSlot {
            cell: tokio::sync::OnceCell::new(),
            opener: Some(open),
            cleanup: Some(cleanup),
            _held: Some(Box::new(held)),
        };
        Self {
            session: Arc::new(slot),
            catalog,
            stateless: Some(stateless),
            kill_attached: false,
        }
    }

    /// With `yes`, the end of the connection also kills the sandbox the
    /// session attached to (`config.sandbox_id`); by default only the ones
    /// it made are killed.
    pub fn kill_attached_on_exit(mut self, yes: bool) -> Self {
        self.kill_attached = yes;
        self
    }

    /// The stateless tools, when `context` is a request of the stateless
    /// revision (it names its protocol version itself) and this server has
    /// them.
    fn stateless_for(&self, context: &RequestContext<RoleServer>) -> Option<&StatelessTools> {
        let modern = context
            .meta
            .protocol_version()
            .is_some_and(|v| v.as_str() >= rmcp::model::ProtocolVersion::NO_INITIALIZE.as_str());
        self.stateless.as_ref().filter(|_| modern)
    }

    /// The session the tools run in, if it is open.
    pub fn session(&self) -> Option<&Arc<Session>> {
        self.session.cell.get()
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("e2b-tools", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.catalog.instructions.to_string())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = match self.stateless_for(&context) {
            Some(stateless) => &stateless.tools,
            None => &self.catalog.tools,
        };
        Ok(ListToolsResult::with_all_items(tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(stateless) = self.stateless_for(&context) {
            if !stateless.tools.iter().any(|t| t.name == request.name) {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool: {}", request.name),
                    None,
                ));
            }
            let args = Value::Object(request.arguments.unwrap_or_default());
            let result = stateless
                .call(&request.name, &args)
                .await
                .unwrap_or_else(failure_result);
            return Ok(tool_result(result).into());
        }
        if !self.catalog.tools.iter().any(|t| t.name == request.name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let called = match self.session.get().await {
            Ok(session) => {
                let call = session.call_json(&request.name, &args);
                let token = context.meta.get_progress_token();
                let work = async {
                    match token {
                        None => call.await,
                        Some(token) => {
                            let relay = relay_progress(session.progress(), &context.peer, token);
                            tokio::select! {
                                result = call => result,
                                never = relay => match never {},
                            }
                        }
                    }
                };
                tokio::pin!(work);
                // On `notifications/cancelled` the call is not dropped (that
                // would abandon the instance mid-call): the component is told
                // to stop, and the call ends on its own, promptly.
                tokio::select! {
                    result = &mut work => result,
                    () = context.ct.cancelled() => {
                        session.cancel_current_call();
                        work.await
                    }
                }
            }
            Err(err) => Err(err),
        };
        let result = match called {
            Ok(value) => tool_result(value),
            // The session failed (a trap): still a result object of the
            // failure shape, so it matches the output schema.
            Err(err) => tool_result(failure_result(err)),
        };
        Ok(result.into())
    }
}

/// How often a running call reports progress even when it prints nothing.
const PROGRESS_HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(2);

/// Sends `notifications/progress` for `token` while the call it belongs to
/// runs (the caller drops this future when the call ends): the latest line
/// the component reported as the message, on every new line and at least
/// every [`PROGRESS_HEARTBEAT`].
async fn relay_progress(
    mut latest: tokio::sync::watch::Receiver<e2b_tools_host::progress::Progress>,
    peer: &rmcp::Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
) -> std::convert::Infallible {
    let before = latest.borrow_and_update().count;
    let mut heartbeat = tokio::time::interval(PROGRESS_HEARTBEAT);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    heartbeat.tick().await;
    let mut sent = 0u64;
    loop {
        tokio::select! {
            changed = latest.changed() => {
                if changed.is_err() {
                    // The session is gone; the call ends on its own.
                    std::future::pending::<()>().await;
                }
            }
            _ = heartbeat.tick() => {}
        }
        let progress = latest.borrow_and_update().clone();
        sent += 1;
        let mut note = rmcp::model::ProgressNotificationParam::new(token.clone(), sent as f64);
        if progress.count > before {
            note = note.with_message(progress.line);
        }
        // A client that went away loses its progress, not the call.
        let _ = peer.notify_progress(note).await;
    }
}
