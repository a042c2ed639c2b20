//! What a tool is: one declaration ([`Tool`]) that the registry in
//! [`super`] turns into the name's dispatch, the parsed call, the output,
//! the failure prefix, the echo, the redaction and the result dict.

use super::args::Args;
use super::exec::OpError;
use super::spec::ToolSpec;
use crate::config::Settings;
use crate::errors::ToolError;
use crate::output::redact::Secrets;
use crate::output::results::OrderedObject;
use crate::protocol::api::SandboxHandle;
use crate::session::platform::Platform;
use crate::session::Ctx;

/// A tool: its catalog entry, its arguments, its work in a sandbox and
/// its result. Implemented by a unit type in the tool's own file and
/// named once in the registry (`tools!` in [`super`]).
pub trait Tool {
    /// Its catalog entry (name, description, schemas, hints, prefix).
    const SPEC: ToolSpec;
    /// Whether the call is one request under the request timeout, which
    /// then bounds it (the file tools).
    const ONE_REQUEST: bool = false;

    /// Its parsed arguments.
    type Input: std::fmt::Debug + Clone + PartialEq + Eq;
    /// What a successful call returns.
    type Output: std::fmt::Debug + Clone + PartialEq + Eq;

    /// Parses the call's JSON arguments (taken out of `args`, so a large
    /// value is moved, not copied); a failure echoes what e2b-adk echoes.
    fn parse(args: &mut Args) -> Result<Self::Input, ToolError>;

    /// Refuses a call before a sandbox is acquired: typed calls come here
    /// unparsed, so what the parser would refuse is checked again.
    fn admit(_settings: &Settings, _args: &Self::Input) -> Result<(), ToolError> {
        Ok(())
    }

    /// Adds the call's path or command to an error, as e2b-adk does.
    fn echo(_args: &Self::Input, err: ToolError) -> ToolError {
        err
    }

    /// Does the call's work in `sandbox` (its arguments may be taken
    /// from, a file's content moved into its request).
    // The guest is single-threaded: no future needs to be `Send`.
    #[allow(async_fn_in_trait)]
    async fn run<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        args: &mut Self::Input,
    ) -> Result<Self::Output, OpError>;

    /// Removes secrets from the output's texts that were not redacted as
    /// they streamed (paths, names, echoes, rich results).
    fn redact(output: Self::Output, _secrets: &Secrets) -> Self::Output {
        output
    }

    /// e2b-adk's result dict keys, before `success`; `rich` adds
    /// `run_code`'s `results`.
    fn dict(output: &Self::Output, rich: bool, obj: OrderedObject) -> OrderedObject;
}
