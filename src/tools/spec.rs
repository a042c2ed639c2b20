//! What a tool is, as data: the [`ToolSpec`] each tool's file declares
//! next to its code, and the behaviour hints MCP's annotations carry.

use crate::config::ToolName;

/// One tool's description, declared in its own file ([`crate::tools::ALL`]
/// lists them all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSpec {
    /// The tool (its name, and its bit in a [`ToolSet`](crate::config::ToolSet)).
    pub tool: ToolName,
    /// A short human title.
    pub title: &'static str,
    /// Description, e2b-adk's text where it is true of this component.
    pub description: &'static str,
    /// JSON Schema of the arguments object.
    pub parameters_schema: &'static str,
    /// JSON Schema of the result object (both its shapes).
    pub result_schema: &'static str,
    /// What calling it does to the sandbox and the world.
    pub hints: Hints,
    /// e2b-adk's prefix of its failure messages.
    pub failure_prefix: &'static str,
    /// Its line in the system-prompt fragment; [`LANGUAGES`] stands for
    /// the backend's `run_code` languages.
    pub instruction: &'static str,
}

impl ToolSpec {
    /// The name models call it by.
    pub const fn name(&self) -> &'static str {
        self.tool.as_str()
    }
}

/// Where an [`instruction`](ToolSpec::instruction) names the languages.
pub const LANGUAGES: &str = "{languages}";

/// Behaviour hints, as MCP's tool annotations carry them. Every tool acts
/// in the sandbox (creating it on first use); "read-only" means it changes
/// nothing there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// It changes nothing in the sandbox.
    pub read_only: bool,
    /// It may overwrite or delete (only meaningful when not read-only).
    pub destructive: bool,
    /// Repeating it with the same arguments has no further effect.
    pub idempotent: bool,
    /// It may reach beyond the sandbox (the internet, from code it runs).
    pub open_world: bool,
}

/// Runs arbitrary code: anything may happen, inside and out.
pub const RUNS_CODE: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// Only looks.
pub const READS: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};
