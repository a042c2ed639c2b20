//! `create_snapshot`: the sandbox's state saved as a snapshot that outlives
//! it, from which new sandboxes start (opt-in).

use e2b_wire::api::SnapshotInfo;
use serde_json::Value;

use super::args::Args;
use super::exec::{plain, OpError};
use super::spec::{Hints, ToolSpec};
use super::tool::Tool;
use crate::config::{Settings, ToolName};
use crate::errors::ToolError;
use crate::output::redact::Secrets;
use crate::output::results::OrderedObject;
use crate::protocol::api::{self, SandboxHandle};
use crate::session::platform::Platform;
use crate::session::retry::Retry;
use crate::session::Ctx;

/// `create_snapshot`: the sandbox kept, to start new ones from.
pub struct CreateSnapshot;

impl Tool for CreateSnapshot {
    const SPEC: ToolSpec = ToolSpec {
        tool: ToolName::CreateSnapshot,
        title: "Snapshot the sandbox",
        hints: Hints {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
        },
        description: "Save the sandbox's current state as a snapshot that outlives the sandbox: its files (and on E2B its memory too: running processes and run_code variables; the local backend keeps files only). The sandbox keeps running. Returns snapshot_id, which starts new sandboxes with that state: a checkpoint to go back to. Use fork_sandbox to branch into new sandboxes at once.",
        parameters_schema: include_str!("../schemas/create_snapshot.json"),
        result_schema: include_str!("../schemas/results/create_snapshot.json"),
        failure_prefix: "Failed to create snapshot: ",
        instruction: "create_snapshot (a checkpoint of the sandbox that outlives it)",
    };

    type Input = SnapshotArgs;
    type Output = SnapshotInfo;

    /// Parses `create_snapshot`'s arguments: an optional name of letters,
    /// digits, `.`, `_` and `-` (E2B makes it part of the snapshot's names).
    fn parse(args: &mut Args) -> Result<SnapshotArgs, ToolError> {
        let name = match args.get("name") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(s))
                if s.len() <= MAX_NAME
                    && s
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
                    && !s.starts_with('.') =>
            {
                Some(s.clone())
            }
            Some(_) => return Err(ToolError::invalid(format!(
                "Invalid name: expected up to {MAX_NAME} letters, digits, '.', '_' or '-' (no path characters)"
            ))),
        };
        Ok(SnapshotArgs { name })
    }

    /// Takes the snapshot. Retried only where nothing can have been made
    /// (429, 503): a repeat would make a second snapshot.
    async fn run<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &mut SnapshotArgs,
    ) -> Result<SnapshotInfo, OpError> {
        let req = api::snapshot_request(settings, &sandbox.id, a.name.as_deref()).map_err(plain)?;
        let (status, body) = ctx
            .exchange_retrying(settings, &req, Retry::Create)
            .await
            .map_err(plain)?;
        api::parse_snapshot(status, &body, &sandbox.id).map_err(plain)
    }

    /// Its texts without secrets.
    fn redact(s: SnapshotInfo, secrets: &Secrets) -> SnapshotInfo {
        SnapshotInfo {
            snapshot_id: secrets.redact(&s.snapshot_id),
            names: s.names.iter().map(|n| secrets.redact(n)).collect(),
        }
    }

    /// The dict's keys.
    fn dict(s: &SnapshotInfo, _rich: bool, obj: OrderedObject) -> OrderedObject {
        obj.put("snapshot_id", s.snapshot_id.as_str())
            .put("names", s.names.clone())
    }
}

/// What `create_snapshot` is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotArgs {
    /// Its optional name.
    pub name: Option<String>,
}

/// The longest snapshot name.
pub const MAX_NAME: usize = 128;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_words() {
        let parse = |v: Value| {
            let mut args = Args::new();
            args.insert("name".into(), v);
            CreateSnapshot::parse(&mut args).map(|a| a.name)
        };
        assert_eq!(parse(Value::Null), Ok(None));
        assert_eq!(parse("".into()), Ok(None));
        assert_eq!(
            parse("before-fix_2.1".into()),
            Ok(Some("before-fix_2.1".into()))
        );
        for bad in ["../x", "a/b", "a:b", ".hidden", "sp ace", &"x".repeat(129)] {
            assert!(parse(bad.into()).is_err(), "{bad}");
        }
        assert!(parse(3.into()).is_err());
    }
}
