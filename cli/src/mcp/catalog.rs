//! What an MCP server lists: the component's catalog as MCP tools, and
//! the same tools for clients of the stateless revision.

use super::error::McpError;
use e2b_tools_host::{Session, SessionError, StatelessPool};
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};

/// The tools and instructions as MCP serves them: read once from a
/// component, shared by every connection of a server.
#[derive(Clone)]
pub struct Catalog {
    pub(super) tools: Arc<Vec<Tool>>,
    pub(super) instructions: Arc<str>,
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
                    source: err,
                })?;
            let output: Map<String, Value> =
                serde_json::from_str(&spec.result_schema).map_err(|err| McpError::BadSchema {
                    tool: spec.name.clone(),
                    source: err,
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

/// How clients of the stateless revision (2026-07-28: no MCP session, each
/// request on its own) are served: by the stateless component, a fresh
/// instance per call, the sandbox travelling as a `sandbox_id` argument and
/// result field, as in a plugin host. Without it such a client would get a
/// fresh sandbox for every call and lose its state without a word.
///
/// With a warm pool, its sandboxes are made from the first such call on
/// (a server whose clients never use the revision holds none of them),
/// and later calls that name no sandbox take one.
#[derive(Clone)]
pub struct StatelessTools {
    runtime: e2b_tools_host::StatelessRuntime,
    options: e2b_tools_host::StatelessOptions,
    pub(super) tools: Arc<Vec<Tool>>,
    /// The warm pool's size (0: none).
    pool_size: usize,
    pool: Arc<OnceLock<Option<StatelessPool>>>,
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
                        "description": "The sandbox_id of an earlier result (or of a fork), to work in that sandbox (its files, variables and processes); omit it to create a sandbox, or pass a snapshot_id to create one from that snapshot."
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
            pool_size: 0,
            pool: Arc::default(),
        }
    }

    /// The same tools with a warm pool of `size` sandboxes (0: none),
    /// started by the first call.
    pub fn with_pool(self, size: usize) -> Self {
        Self {
            pool_size: size,
            ..self
        }
    }

    /// Calls `tool` in a fresh instance: in the sandbox `args` name, else
    /// in one from the pool, else in a new one.
    pub(super) async fn call(&self, tool: &str, args: &Value) -> Result<Value, SessionError> {
        match self.started_pool() {
            Some(pool) => pool.call(tool, args).await,
            None => self.runtime.call(&self.options, tool, args).await,
        }
    }

    /// The warm pool, started now if this is the first call.
    fn started_pool(&self) -> Option<&StatelessPool> {
        if self.pool_size == 0 {
            return None;
        }
        self.pool
            .get_or_init(|| {
                StatelessPool::start(&self.runtime, self.options.clone(), self.pool_size)
                    .map_err(|err| tracing::warn!(error = %err, "no warm pool for stateless calls"))
                    .ok()
            })
            .as_ref()
    }

    /// Closes the warm pool, if it was started: its waiting sandboxes are
    /// killed.
    pub async fn close(&self) {
        if let Some(Some(pool)) = self.pool.get() {
            pool.close().await;
        }
    }
}

fn add_property(schema: &mut Map<String, Value>, name: &str, property: Value) {
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(name.to_string(), property);
    }
}
