//! `e2b-tools sandbox list | kill` and `e2b-tools snapshot list | delete`:
//! every sandbox and snapshot the API key reaches, on E2B or on the server
//! `E2B_API_URL` names (a `local serve`), through the component (its
//! `sandboxes` interface and `lifecycle.kill`), as the `e2b` CLI's
//! `sandbox list` and `sandbox kill` do.

use super::args::{GlobalArgs, SandboxCommand, SnapshotCommand};
use super::{load_runtime, open_session_with, print_stdout, session_options, CliFailure};
use super::{EXIT_FAILURE, EXIT_USAGE};
use e2b_tools_host::{e2b_env, ListedSandbox, ListedSnapshot, Session, SessionError, ToolError};
use serde_json::{json, Value};

/// `sandbox list | kill`.
pub(super) async fn sandbox(
    global: &GlobalArgs,
    command: SandboxCommand,
) -> Result<u8, CliFailure> {
    let session = open(global).await?;
    match command {
        SandboxCommand::List { json } => {
            let listed = answer(session.list_sandboxes().await)?;
            print_stdout(&if json {
                format!(
                    "{}\n",
                    Value::Array(listed.iter().map(sandbox_json).collect())
                )
            } else {
                sandbox_table(&listed)
            })?;
            Ok(0)
        }
        SandboxCommand::Kill { ids, all } => {
            let ids = match all {
                true => answer(session.list_sandboxes().await)?
                    .into_iter()
                    .map(|s| s.sandbox_id)
                    .collect(),
                false => ids,
            };
            let kill = async |id: &str| session.kill_sandbox(id).await;
            each(ids, "killed", "no sandbox", " (already gone?)", kill).await
        }
    }
}

/// `snapshot list | delete`.
pub(super) async fn snapshot(
    global: &GlobalArgs,
    command: SnapshotCommand,
) -> Result<u8, CliFailure> {
    let session = open(global).await?;
    match command {
        SnapshotCommand::List { json } => {
            let listed = answer(session.list_snapshots().await)?;
            print_stdout(&if json {
                format!(
                    "{}\n",
                    Value::Array(listed.iter().map(snapshot_json).collect())
                )
            } else {
                snapshot_table(&listed)
            })?;
            Ok(0)
        }
        SnapshotCommand::Delete { ids } => {
            let delete = async |id: &str| session.delete_snapshot(id).await;
            each(ids, "deleted", "no snapshot", "", delete).await
        }
    }
}

/// Acts on each id in turn (`act` answers whether it was there): prints
/// `<done> <id>`, or says `<missing> <id><hint>` for one that was not,
/// which makes the status 1; a failure ends it.
async fn each(
    ids: Vec<String>,
    done: &str,
    missing: &str,
    hint: &str,
    act: impl AsyncFn(&str) -> Result<Result<bool, ToolError>, SessionError>,
) -> Result<u8, CliFailure> {
    let mut status = 0;
    for id in ids {
        if answer(act(&id).await)? {
            println!("{done} {id}");
        } else {
            eprintln!("e2b-tools: {missing} {id}{hint}");
            status = EXIT_FAILURE;
        }
    }
    Ok(status)
}

/// A session on the server the environment names: these commands list
/// what a server holds, so the in-process local backend (always empty)
/// is no use to them.
async fn open(global: &GlobalArgs) -> Result<Session, CliFailure> {
    let env = e2b_env(std::env::vars());
    if !env.contains_key("E2B_API_KEY") {
        return Err(CliFailure {
            code: EXIT_USAGE,
            message: "these commands list what a server holds: set E2B_API_KEY for E2B, or \
                      the three lines `e2b-tools local serve` prints (E2B_API_URL, \
                      E2B_SANDBOX_URL, E2B_API_KEY) for a local server"
                .into(),
        });
    }
    let runtime = load_runtime(global).await?;
    open_session_with(&runtime, session_options(global, env)).await
}

/// A call's answer, or the failure it was.
fn answer<T>(result: Result<Result<T, ToolError>, SessionError>) -> Result<T, CliFailure> {
    result
        .map_err(CliFailure::host)?
        .map_err(|err| CliFailure::host(err.message))
}

fn sandbox_json(s: &ListedSandbox) -> Value {
    let metadata: serde_json::Map<String, Value> = s
        .metadata
        .iter()
        .map(|kv| (kv.key.clone(), json!(kv.value)))
        .collect();
    json!({
        "sandbox_id": s.sandbox_id,
        "template_id": s.template_id,
        "state": s.state,
        "started_at": s.started_at,
        "end_at": s.end_at,
        "metadata": metadata,
    })
}

fn snapshot_json(s: &ListedSnapshot) -> Value {
    json!({"snapshot_id": s.snapshot_id, "names": s.names})
}

/// Columns padded to their widest cell, a header first.
fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

fn sandbox_table(listed: &[ListedSandbox]) -> String {
    if listed.is_empty() {
        return "no sandboxes\n".into();
    }
    let rows = listed
        .iter()
        .map(|s| {
            vec![
                s.sandbox_id.clone(),
                s.state.clone(),
                s.template_id.clone(),
                s.started_at.clone(),
                s.end_at.clone(),
            ]
        })
        .collect();
    table(
        &["SANDBOX ID", "STATE", "TEMPLATE", "STARTED", "ENDS"],
        rows,
    )
}

fn snapshot_table(listed: &[ListedSnapshot]) -> String {
    if listed.is_empty() {
        return "no snapshots\n".into();
    }
    let rows = listed
        .iter()
        .map(|s| vec![s.snapshot_id.clone(), s.names.join(", ")])
        .collect();
    table(&["SNAPSHOT ID", "NAMES"], rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pad_every_column_to_its_widest_cell() {
        let out = table(
            &["ID", "STATE"],
            vec![
                vec!["abc".into(), "running".into()],
                vec!["a".into(), "paused".into()],
            ],
        );
        assert_eq!(out, "ID   STATE\nabc  running\na    paused\n");
    }
}
