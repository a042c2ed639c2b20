//! The tools as an MCP server (rmcp), one [`Session`] per connection.
//!
//! The catalog comes from the component (`catalog.list-tools`): names,
//! titles, descriptions, input and output JSON Schemas and behaviour hints
//! (MCP tool annotations) are served as they are, and calls go through
//! `catalog.call-tool`, so the MCP tools behave exactly as the JSON tools a
//! model gets elsewhere. A result is the result object twice, as MCP asks:
//! `structuredContent` (matching the tool's `outputSchema`) and a text
//! block holding it as JSON; images produced by `run_code` with rich
//! results become MCP image blocks. `success: false` sets `isError`.
//!
//! ```no_run
//! # async fn example(runtime: e2b_tools_host::Runtime) -> anyhow::Result<()> {
//! use e2b_tools_cli::mcp::McpServer;
//! use e2b_tools_host::{Session, SessionOptions};
//! let session = Session::open(&runtime, SessionOptions::default()).await?;
//! McpServer::new(session).await?.serve_stdio().await?;
//! # Ok(())
//! # }
//! ```

pub mod http;

use e2b_tools_host::{Session, SessionError};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Why the MCP server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The session failed while reading the catalog.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A tool's parameters schema from the component is not a JSON object.
    #[error("the schema of tool {tool} is not a JSON object: {reason}")]
    BadSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// The MCP transport failed.
    #[error("MCP transport: {0}")]
    Transport(String),
}

/// An MCP server handler over one session.
#[derive(Clone)]
pub struct McpServer {
    session: Arc<SessionSlot>,
    catalog: Catalog,
    stateless: Option<StatelessTools>,
}

/// How clients of the stateless revision (2026-07-28: no MCP session, each
/// request on its own) are served: by the stateless component, a fresh
/// instance per call, the sandbox travelling as a `sandbox_id` argument and
/// result field, as in a plugin host. Without it such a client would get a
/// fresh sandbox for every call and lose its state without a word.
#[derive(Clone)]
pub struct StatelessTools {
    runtime: e2b_tools_host::StatelessRuntime,
    options: e2b_tools_host::StatelessOptions,
    tools: Arc<Vec<Tool>>,
}

impl StatelessTools {
    /// The tools of `catalog` with a `sandbox_id` argument and result
    /// field, and `close_sandbox`.
    pub fn new(
        runtime: e2b_tools_host::StatelessRuntime,
        options: e2b_tools_host::StatelessOptions,
        catalog: &Catalog,
    ) -> Self {
        let mut tools: Vec<Tool> = catalog
            .tools
            .iter()
            .map(|tool| {
                let mut tool = tool.clone();
                let mut input = (*tool.input_schema).clone();
                add_property(
                    &mut input,
                    "sandbox_id",
                    serde_json::json!({
                        "type": "string",
                        "description": "The sandbox_id of an earlier result, to work in that sandbox (its files, variables and processes); omit it to create a sandbox."
                    }),
                );
                tool.input_schema = Arc::new(input);
                if let Some(output) = &tool.output_schema {
                    let mut output = (**output).clone();
                    add_property(&mut output, "sandbox_id", serde_json::json!({"type": "string", "description": "The sandbox the call ran in: pass it to the next call."}));
                    add_property(&mut output, "kind", serde_json::json!({"type": "string", "description": "The error kind when success is false."}));
                    tool.output_schema = Some(Arc::new(output));
                }
                let description = format!(
                    "{} Pass the sandbox_id of an earlier result to keep working in the same sandbox; call close_sandbox when done.",
                    tool.description.as_deref().unwrap_or("")
                );
                tool.description = Some(description.into());
                tool
            })
            .collect();
        let input: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {"sandbox_id": {"type": "string", "description": "The sandbox to close."}},
            "required": ["sandbox_id"],
        }))
        .unwrap_or_default();
        let output: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {
                "closed": {"type": "string", "enum": ["killed", "paused", "gone"]},
                "sandbox_id": {"type": "string"},
                "success": {"type": "boolean"},
                "error": {"type": "string"},
                "partial_output": {"type": "string"},
                "kind": {"type": "string"},
            },
            "required": ["success"],
        }))
        .unwrap_or_default();
        tools.push(
            Tool::new(
                "close_sandbox",
                "Close a sandbox when the work is done: kill it (or pause it if it was made to pause at its timeout). Answers with closed: killed, paused, or gone.",
                input,
            )
            .with_title("Close the sandbox")
            .with_raw_output_schema(Arc::new(output))
            .with_annotations(
                ToolAnnotations::with_title("Close the sandbox")
                    .read_only(false)
                    .destructive(true)
                    .idempotent(true)
                    .open_world(false),
            ),
        );
        Self {
            runtime,
            options,
            tools: Arc::new(tools),
        }
    }
}

fn add_property(schema: &mut Map<String, Value>, name: &str, property: Value) {
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(name.to_string(), property);
    }
}

/// The tools and instructions as MCP serves them: read once from a
/// component, shared by every connection of a server.
#[derive(Clone)]
pub struct Catalog {
    tools: Arc<Vec<Tool>>,
    instructions: Arc<str>,
}

/// Opens a connection's session when its first tool call comes.
pub type SessionOpener = Arc<
    dyn Fn() -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<Session, SessionError>> + Send>,
        > + Send
        + Sync,
>;

/// A connection's session: open from the start (stdio), or opened by its
/// first tool call (HTTP, where most connections may never call one). When
/// the last handle goes, an opened session's sandbox is shut down on
/// `cleanup`.
pub(crate) struct SessionSlot {
    cell: tokio::sync::OnceCell<Arc<Session>>,
    opener: Option<SessionOpener>,
    cleanup: Option<tokio_util::task::TaskTracker>,
    _live: Option<http::LiveSession>,
}

impl SessionSlot {
    async fn get(&self) -> Result<&Arc<Session>, SessionError> {
        self.cell
            .get_or_try_init(|| async {
                match &self.opener {
                    Some(open) => open().await.map(Arc::new),
                    None => Err(SessionError::InvalidOptions(
                        "the connection has no session".into(),
                    )),
                }
            })
            .await
    }
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        let (Some(session), Some(tracker)) = (self.cell.take(), self.cleanup.as_ref()) else {
            return;
        };
        tracker.spawn(async move {
            if let Err(err) = session.shutdown().await {
                crate::audit::shutdown_failed(&err);
            }
        });
    }
}

impl Catalog {
    /// Reads the tools and instructions of `session`'s component.
    pub async fn read(session: &Session) -> Result<Self, McpError> {
        let specs = session.list_tools().await?;
        let instructions = session.instructions().await?;
        let mut tools = Vec::with_capacity(specs.len());
        for spec in specs {
            let schema: Map<String, Value> = serde_json::from_str(&spec.parameters_schema)
                .map_err(|err| McpError::BadSchema {
                    tool: spec.name.clone(),
                    reason: err.to_string(),
                })?;
            let output: Map<String, Value> =
                serde_json::from_str(&spec.result_schema).map_err(|err| McpError::BadSchema {
                    tool: spec.name.clone(),
                    reason: err.to_string(),
                })?;
            let hints = &spec.hints;
            let annotations = ToolAnnotations::with_title(spec.title.clone())
                .read_only(hints.read_only)
                .destructive(hints.destructive)
                .idempotent(hints.idempotent)
                .open_world(hints.open_world);
            tools.push(
                Tool::new(spec.name, spec.description, schema)
                    .with_title(spec.title)
                    .with_raw_output_schema(Arc::new(output))
                    .with_annotations(annotations),
            );
        }
        Ok(Self {
            tools: Arc::new(tools),
            instructions: instructions.into(),
        })
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
            _live: None,
        };
        Ok(Self {
            session: Arc::new(slot),
            catalog,
            stateless: None,
        })
    }

    /// A connection whose session `open` makes on the first tool call,
    /// and `cleanup` shuts down when the connection's handler is dropped.
    pub(crate) fn lazy(
        catalog: Catalog,
        stateless: StatelessTools,
        open: SessionOpener,
        cleanup: tokio_util::task::TaskTracker,
        live: http::LiveSession,
    ) -> Self {
        let slot = SessionSlot {
            cell: tokio::sync::OnceCell::new(),
            opener: Some(open),
            cleanup: Some(cleanup),
            _live: Some(live),
        };
        Self {
            session: Arc::new(slot),
            catalog,
            stateless: Some(stateless),
        }
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

    /// Serves MCP on stdin/stdout until the client closes the connection,
    /// then shuts the sandbox down.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.serve(rmcp::transport::stdio()).await
    }

    /// Serves MCP on any byte transport (for example an in-memory duplex in
    /// tests) until it closes, then shuts the sandbox down.
    pub async fn serve<R, W>(self, (reader, writer): (R, W)) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let slot = self.session.clone();
        let served = async {
            let running = ServiceExt::serve(self, (reader, writer))
                .await
                .map_err(|err| McpError::Transport(err.to_string()))?;
            running
                .waiting()
                .await
                .map_err(|err| McpError::Transport(err.to_string()))?;
            Ok::<(), McpError>(())
        }
        .await;
        if let Some(session) = slot.cell.get() {
            if let Err(err) = session.shutdown().await {
                crate::audit::shutdown_failed(&err);
            }
        }
        served
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
                .runtime
                .call(&stateless.options, &request.name, &args)
                .await
                .unwrap_or_else(|err| {
                    serde_json::json!({
                        "success": false,
                        "error": err.to_string(),
                        "partial_output": "",
                    })
                });
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
            Err(err) => tool_result(serde_json::json!({
                "success": false,
                "error": err.to_string(),
                "partial_output": "",
            })),
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

/// Turns a tool's result object into MCP content: the object as
/// structured content and as JSON text, images as image blocks.
pub fn tool_result(mut value: Value) -> CallToolResult {
    let success = value.get("success").and_then(Value::as_bool) == Some(true);
    let images = extract_images(&mut value);
    let mut content = vec![ContentBlock::text(value.to_string())];
    content.extend(
        images
            .into_iter()
            .map(|(data, mime)| ContentBlock::image(data, mime)),
    );
    let mut result = if success {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    // A result object always; anything else (a host error's text) is not
    // structured.
    result.structured_content = value.is_object().then_some(value);
    result
}

/// Moves base64 image data out of a result's rich results (`rich` or
/// `results`: objects with `mime_type` and `data`), leaving a short note in
/// their place so the text block stays readable.
fn extract_images(value: &mut Value) -> Vec<(String, String)> {
    let mut images = Vec::new();
    for key in ["rich", "results"] {
        let Some(items) = value.get_mut(key).and_then(Value::as_array_mut) else {
            continue;
        };
        for item in items {
            let Some(object) = item.as_object_mut() else {
                continue;
            };
            let mime = object
                .get("mime_type")
                .or_else(|| object.get("mimeType"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let Some(mime) = mime.filter(|m| m.starts_with("image/") && m != "image/svg+xml")
            else {
                continue;
            };
            if let Some(Value::String(data)) = object.remove("data") {
                object.insert(
                    "data".into(),
                    Value::String(format!("<{mime} image returned as MCP image content>")),
                );
                images.push((data, mime));
            }
        }
    }
    images
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn failures_are_error_results() {
        let result = tool_result(json!({"success": false, "error": "x", "partial_output": ""}));
        assert_eq!(result.is_error, Some(true));
        assert_eq!(result.content.len(), 1);
        assert_eq!(result.structured_content.unwrap()["error"], "x");
    }

    #[test]
    fn png_rich_results_become_image_blocks() {
        let result = tool_result(json!({
            "stdout": "", "rich": [
                {"mime_type": "image/png", "data": "iVBORw0KGgo=", "is_main_result": true},
                {"mime_type": "text/html", "data": "<b>x</b>", "is_main_result": false}
            ],
            "success": true
        }));
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.content.len(), 2);
        match &result.content[1] {
            ContentBlock::Image(image) => {
                assert_eq!(image.data, "iVBORw0KGgo=");
                assert_eq!(image.mime_type, "image/png");
            }
            other => panic!("expected an image, got {other:?}"),
        }
        match &result.content[0] {
            ContentBlock::Text(text) => {
                assert!(!text.text.contains("iVBORw0KGgo="));
                assert!(text.text.contains("<b>x</b>"));
            }
            other => panic!("expected text, got {other:?}"),
        }
    }
}
