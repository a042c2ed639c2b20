//! Every sandbox and snapshot the API key reaches, by id, beyond the
//! session's own: what the `e2b` CLI's `sandbox list` and `sandbox kill`
//! do (WIT `sandboxes`), for a host that shows them and stops them. All
//! pages are read; a listing never touches the session's state.

use e2b_wire::api::{SandboxDetail, SnapshotInfo};

use super::platform::Platform;
use super::retry::Retry;
use super::Ctx;
use crate::errors::{ErrorKind, Failure};
use crate::protocol::api;
use crate::protocol::request::HttpRequest;

/// The most pages a listing reads (100 each): a server whose tokens never
/// end cannot keep a call going forever.
const MAX_PAGES: usize = 1_000;

impl<P: Platform> Ctx<P> {
    /// Every sandbox of the key, running and paused.
    pub async fn list_sandboxes(&self) -> Result<Vec<SandboxDetail>, Failure> {
        self.every_page(api::list_request, api::parse_list).await
    }

    /// Every snapshot of the key.
    pub async fn list_snapshots(&self) -> Result<Vec<SnapshotInfo>, Failure> {
        self.every_page(api::snapshots_request, api::parse_snapshots)
            .await
    }

    /// Deletes snapshot `id`: `false` when there was none.
    pub async fn delete_snapshot(&self, id: &str) -> Result<bool, Failure> {
        let settings = self.read(|s| s.settings.clone());
        let req = api::delete_snapshot_request(&settings, id)?;
        let (status, body) = self
            .exchange_retrying(&settings, &req, Retry::Idempotent)
            .await?;
        // 2xx: deleted; 404: there was none (as a kill answers).
        api::parse_kill(status, &body)
    }

    /// Follows `x-next-token` from the first page to the last.
    async fn every_page<T>(
        &self,
        request: impl Fn(&crate::config::Settings, Option<&str>) -> Result<HttpRequest, Failure>,
        parse: impl Fn(u16, &[u8]) -> Result<Vec<T>, Failure>,
    ) -> Result<Vec<T>, Failure> {
        let settings = self.read(|s| s.settings.clone());
        let mut all = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let req = request(&settings, token.as_deref())?;
            let (status, headers, body) = self
                .exchange_read(&settings, &req, Retry::Idempotent)
                .await?;
            all.extend(parse(status, &body)?);
            token = headers
                .into_iter()
                .find(|(name, _)| name == "x-next-token")
                .map(|(_, value)| value)
                .filter(|value| !value.is_empty());
            if token.is_none() {
                return Ok(all);
            }
        }
        Err(Failure::new(
            ErrorKind::Internal,
            format!("the listing did not end after {MAX_PAGES} pages"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::session::platform::fake::{run, Answer};
    use crate::testing::*;

    const LISTED: &str = r#"{"templateID":"t","sandboxID":"SBX","clientID":"c","startedAt":"2027-01-15T08:00:00Z","endAt":"2027-01-15T08:05:00Z","envdVersion":"0.6.13","cpuCount":2,"memoryMB":512,"diskSizeMB":1024,"state":"running"}"#;

    #[test]
    fn a_listing_follows_every_page_and_a_failure_says_why() {
        let ctx = ctx(300);
        let page = |ids: &[&str]| {
            let items: Vec<String> = ids.iter().map(|id| LISTED.replace("SBX", id)).collect();
            format!("[{}]", items.join(","))
        };
        ctx.platform.route(
            "Get http://api.test/v2/sandboxes?state=running%2Cpaused&limit=100&nextToken=p2",
            vec![Answer::new(200, page(&["c"]))],
        );
        ctx.platform.route(
            "Get http://api.test/v2/sandboxes?state=running%2Cpaused&limit=100",
            vec![Answer::new(200, page(&["a", "b"])).header("x-next-token", "p2")],
        );
        let listed = run(&ctx.platform.clock, ctx.list_sandboxes()).unwrap();
        let ids: Vec<&str> = listed.iter().map(|s| s.sandbox_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        // Nothing of the session's own changed.
        assert!(ctx.snapshot().sandbox.is_none());

        ctx.platform.route(
            "Get http://api.test/snapshots",
            vec![Answer::new(
                401,
                r#"{"code":401,"message":"Invalid API key"}"#,
            )],
        );
        let err = run(&ctx.platform.clock, ctx.list_snapshots()).unwrap_err();
        assert_eq!(err.kind, crate::errors::ErrorKind::Auth, "{err:?}");
    }

    #[test]
    fn deleting_a_snapshot_that_is_not_there_is_false() {
        let ctx = ctx(300);
        ctx.platform.route(
            "Delete http://api.test/templates/team%2Fname%3Adefault",
            vec![Answer::new(404, r#"{"code":404,"message":"not found"}"#)],
        );
        let deleted = run(
            &ctx.platform.clock,
            ctx.delete_snapshot("team/name:default"),
        )
        .unwrap();
        assert!(!deleted);
    }
}
