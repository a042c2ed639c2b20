//! `list_files`: a directory's entries, one level (e2b-adk's) or up to
//! [`MAX_LIST_DEPTH`].

use serde_json::{Map, Value};

use super::args::{truthy, Args};
use super::exec::{plain, OpError};
use super::spec::{ToolSpec, READS};
use super::tool::Tool;
use crate::config::{Settings, ToolName};
use crate::errors::ToolError;
use crate::output::redact::Secrets;
use crate::output::results::OrderedObject;
use crate::protocol::api::SandboxHandle;
use crate::protocol::envd::{self, ListedEntry};
use crate::session::platform::Platform;
use crate::session::retry::Retry;
use crate::session::Ctx;

/// `list_files`: a directory's entries, to a depth.
pub struct ListFiles;

impl Tool for ListFiles {
    const SPEC: ToolSpec = ToolSpec {
        tool: ToolName::ListFiles,
        title: "List files",
        hints: READS,
        description: "List the entries of a directory in an isolated E2B sandbox. Returns each child's name and type (file or dir). Defaults to the current directory. Use this to explore the sandbox filesystem.",
        parameters_schema: include_str!("../schemas/list_files.json"),
        result_schema: include_str!("../schemas/results/list_files.json"),
        failure_prefix: "Failed to list directory: ",
        instruction: "list_files (one directory level, or up to 10)",
    };

    type Input = ListFilesArgs;
    type Output = Listing;
    const ONE_REQUEST: bool = true;

    /// Parses `list_files`'s arguments (the directory, `.` by default; the
    /// depth); a failure echoes the path.
    fn parse(args: &mut Args) -> Result<ListFilesArgs, ToolError> {
        let path = match args.get("path") {
            Some(v) if truthy(v) => match v {
                Value::String(s) => s.clone(),
                other => {
                    return Err(ToolError::invalid(
                        "Failed to list directory: invalid path: expected a string",
                    )
                    .with_path(other.to_string()))
                }
            },
            _ => ".".to_string(),
        };
        let depth = list_depth(args).map_err(|e| e.with_path(path.clone()))?;
        Ok(ListFilesArgs { path, depth })
    }

    /// Adds the path to an error.
    fn echo(a: &ListFilesArgs, err: ToolError) -> ToolError {
        err.with_path(a.path.clone())
    }

    /// Lists the directory (retried: listing changes nothing).
    async fn run<P: Platform>(
        ctx: &Ctx<P>,
        settings: &Settings,
        sandbox: &SandboxHandle,
        a: &mut ListFilesArgs,
    ) -> Result<Listing, OpError> {
        let req = envd::list_dir_request(settings, sandbox, &a.path, a.depth);
        let (status, body) = ctx
            .exchange_retrying(settings, &req, Retry::Idempotent)
            .await
            .map_err(plain)?;
        let mut entries = envd::parse_list_dir(status, &body).map_err(plain)?;
        let omitted = entries.len().saturating_sub(envd::MAX_LIST_ENTRIES);
        entries.truncate(envd::MAX_LIST_ENTRIES);
        Ok(Listing {
            path: a.path.clone(),
            entries,
            with_paths: a.depth > 1,
            omitted,
        })
    }

    /// Removes secrets from every text of the output.
    fn redact(l: Listing, secrets: &Secrets) -> Listing {
        let r = |s: String| secrets.redact(&s);
        Listing {
            path: r(l.path),
            entries: l
                .entries
                .into_iter()
                .map(|e| ListedEntry {
                    name: r(e.name),
                    path: r(e.path),
                    ..e
                })
                .collect(),
            ..l
        }
    }

    /// e2b-adk's dict; entries carry `path` when deeper than 1, and
    /// `omitted_entries` says what the bound left out.
    fn dict(l: &Listing, _rich: bool, obj: OrderedObject) -> OrderedObject {
        let entries: Vec<Value> = l
            .entries
            .iter()
            .map(|e| {
                let mut entry = serde_json::json!({"name": e.name, "type": e.kind.as_str()});
                if l.with_paths {
                    entry["path"] = e.path.clone().into();
                }
                entry
            })
            .collect();
        let obj = obj.put("path", l.path.as_str()).put("entries", entries);
        if l.omitted > 0 {
            obj.put("omitted_entries", l.omitted)
        } else {
            obj
        }
    }
}

/// What `list_files` is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListFilesArgs {
    /// Directory, `.` by default.
    pub path: String,
    /// How many levels: 1 (its children, e2b-adk's) to [`MAX_LIST_DEPTH`].
    pub depth: u32,
}

/// What `list_files` listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The requested path.
    pub path: String,
    /// Its entries, at most [`MAX_LIST_ENTRIES`](envd::MAX_LIST_ENTRIES).
    pub entries: Vec<ListedEntry>,
    /// Whether entries carry their `path` (a listing deeper than 1).
    pub with_paths: bool,
    /// How many entries were left out past the bound.
    pub omitted: usize,
}

/// The deepest `list_files` walks.
pub const MAX_LIST_DEPTH: u32 = 10;

/// `list_files`'s optional `depth`: absent or null is 1.
fn list_depth(args: &Map<String, Value>) -> Result<u32, ToolError> {
    match args.get("depth") {
        None | Some(Value::Null) => Ok(1),
        Some(Value::Number(n)) => n
            .as_u64()
            .filter(|d| (1..=u64::from(MAX_LIST_DEPTH)).contains(d))
            .map(|d| d as u32)
            .ok_or_else(invalid_depth),
        Some(_) => Err(invalid_depth()),
    }
}

fn invalid_depth() -> ToolError {
    ToolError::invalid(format!(
        "Invalid depth: expected an integer between 1 and {MAX_LIST_DEPTH}"
    ))
}

#[cfg(test)]
mod tests {
    use crate::tools::{parse_call, ToolCall};

    #[test]
    fn list_depth_is_bounded() {
        match parse_call("list_files", r#"{"path": "/", "depth": 3}"#).unwrap() {
            ToolCall::ListFiles(crate::tools::list_files::ListFilesArgs { depth, .. }) => {
                assert_eq!(depth, 3)
            }
            other => panic!("{other:?}"),
        }
        for bad in ["0", "10000", "2.5", "-1", r#""3""#, "true"] {
            let json = format!(r#"{{"path": "/", "depth": {bad}}}"#);
            let err = parse_call("list_files", &json).unwrap_err();
            assert_eq!(
                err.message, "Invalid depth: expected an integer between 1 and 10",
                "{bad}"
            );
            assert_eq!(err.path.as_deref(), Some("/"));
        }
    }
}
