//! Every sandbox and snapshot the API key reaches, through a [`Session`]
//! (the component's `sandboxes` interface and `lifecycle.kill`): for a
//! host that lists and stops them, as `e2b-tools sandbox list` does. The
//! session needs no sandbox of its own for them.

use crate::bindings::{ListedSandbox, ListedSnapshot, ToolError};
use crate::error::SessionError;
use crate::session::Session;

impl Session {
    /// Every sandbox of the key, running and paused.
    pub async fn list_sandboxes(
        &self,
    ) -> Result<Result<Vec<ListedSandbox>, ToolError>, SessionError> {
        self.component_call(async |component, store| {
            component
                .e2b_tools_sandboxes()
                .call_list_sandboxes(store)
                .await
        })
        .await
    }

    /// Every snapshot of the key.
    pub async fn list_snapshots(
        &self,
    ) -> Result<Result<Vec<ListedSnapshot>, ToolError>, SessionError> {
        self.component_call(async |component, store| {
            component
                .e2b_tools_sandboxes()
                .call_list_snapshots(store)
                .await
        })
        .await
    }

    /// Deletes snapshot `id`: `Ok(false)` when there was none.
    pub async fn delete_snapshot(&self, id: &str) -> Result<Result<bool, ToolError>, SessionError> {
        self.component_call(async |component, store| {
            component
                .e2b_tools_sandboxes()
                .call_delete_snapshot(store, id)
                .await
        })
        .await
    }

    /// Kills sandbox `id` by its id (any the key reaches; one of this
    /// session's is forgotten and reported stopped): `Ok(false)` when E2B
    /// no longer knew it.
    pub async fn kill_sandbox(&self, id: &str) -> Result<Result<bool, ToolError>, SessionError> {
        self.component_call(async |component, store| {
            component.e2b_tools_lifecycle().call_kill(store, id).await
        })
        .await
    }
}
