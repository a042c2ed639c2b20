//! The one sandbox of this instance: lazy creation (failures not cached),
//! attaching by ID, keep-alive, expiry, shutdown.
//!
//! Keep-alive: nothing async survives between export calls, so the session
//! remembers when the sandbox expires (on the monotonic clock) and
//! refreshes it whenever less than half of the TTL is left: before a call,
//! and during one from a heartbeat scheduled from that expiry (not from the
//! call's start), so every refresh comes with half a TTL of margin. A
//! refresh sets the full TTL from now, so it is sent only when that is later
//! than the known expiry: attaching to a sandbox that has longer left than
//! our TTL never shortens it.

#[cfg(target_arch = "wasm32")]
pub mod http;
pub mod inventory;
mod keep_alive;
pub mod platform;
pub mod report;
pub mod retry;

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::future::Future;
use std::rc::Rc;

pub use keep_alive::KeepAlive;

use crate::config::Settings;
use crate::errors::{ErrorKind, Failure};
use crate::output::redact::Secrets;
use crate::protocol::api::{self, SandboxHandle};
use crate::protocol::envd;
use crate::protocol::request::HttpRequest;
use platform::{Platform, ResponseBody};
use report::{Origin, Report, StopReason};
use retry::{Attempt, Retry};

/// The longest the process `prepare` runs to warm a new sandbox may take.
const WARM_UP_MS: u64 = 10_000;

/// The state of the instance.
#[derive(Debug, Clone)]
pub struct Session {
    /// The resolved options.
    pub settings: Settings,
    /// The open sandbox.
    pub sandbox: Option<SandboxHandle>,
    /// Its keep-alive state.
    pub keep_alive: KeepAlive,
    /// The forks this session made, addressable by id (`sandbox_id`).
    pub forks: Vec<Fork>,
    /// The sandboxes whose stop was reported (so a dead sandbox that
    /// stays open, as expiry leaves it, is reported gone once).
    pub stopped: BTreeSet<String>,
}

/// A sandbox this session forked from its own.
#[derive(Debug, Clone)]
pub struct Fork {
    /// The fork.
    pub handle: SandboxHandle,
    /// Its keep-alive state (its own TTL).
    pub keep_alive: KeepAlive,
    /// Killed with the session (`false`: handed on, left to its timeout).
    pub owned: bool,
}

impl Session {
    /// A session with `settings` and no sandbox.
    pub fn new(settings: Settings) -> Self {
        let keep_alive = KeepAlive::new(settings.ttl_seconds());
        Self {
            settings,
            sandbox: None,
            keep_alive,
            forks: Vec::new(),
            stopped: BTreeSet::new(),
        }
    }

    /// The secrets that must never appear in any text we return.
    pub fn secrets(&self) -> Secrets {
        let tokens = self
            .sandbox
            .iter()
            .chain(self.forks.iter().map(|f| &f.handle))
            .flat_map(|h| h.access_token.iter().chain(h.traffic_token.iter()));
        Secrets::new(self.settings.api_key.iter().chain(tokens).cloned())
    }

    /// The keep-alive state of sandbox `id` (the session's own, or a fork).
    fn keep_alive_of(&mut self, id: &str) -> Option<&mut KeepAlive> {
        if self.sandbox.as_ref().is_some_and(|h| h.id == id) {
            return Some(&mut self.keep_alive);
        }
        self.forks
            .iter_mut()
            .find(|f| f.handle.id == id)
            .map(|f| &mut f.keep_alive)
    }
}

/// Where a sandbox could not be provided.
#[derive(Debug)]
pub enum Unavailable {
    /// Creating or attaching failed (e2b-adk: `Sandbox unavailable: …`).
    Create(Failure),
    /// The open sandbox expired, or the one named is not this session's
    /// (reported with the tool's prefix).
    Expired(Failure),
}

/// The message for a `sandbox_id` that names none of the session's.
pub fn not_ours(id: &str) -> Failure {
    Failure::new(
        ErrorKind::InvalidArgument,
        format!(
            "Sandbox {id} is not one of this session's: leave sandbox_id out for the session's own sandbox, or pass an id fork_sandbox returned"
        ),
    )
}

/// One instance's session and the platform it runs on: every decision
/// about the sandbox's life (creation, attaching, keep-alive, expiry,
/// shutdown) is made here, the same natively and in wasm.
pub struct Ctx<P> {
    /// HTTP and clocks.
    pub platform: P,
    /// The instance's state; borrowed only between awaits.
    pub session: Rc<RefCell<Session>>,
}

impl<P: Platform> Ctx<P> {
    /// A copy of the session.
    pub fn snapshot(&self) -> Session {
        self.session.borrow().clone()
    }

    /// Reads the session without copying it (a copy of the settings is a
    /// score of allocations, on every call).
    pub fn read<T>(&self, f: impl FnOnce(&Session) -> T) -> T {
        f(&self.session.borrow())
    }

    /// Changes the session.
    pub fn update<T>(&self, f: impl FnOnce(&mut Session) -> T) -> T {
        f(&mut self.session.borrow_mut())
    }

    /// The secrets of the session as it is now.
    pub fn secrets(&self) -> Secrets {
        self.session.borrow().secrets()
    }

    /// Runs `fut`, failing with `on_timeout()` after `ms` (0: no limit).
    pub async fn with_deadline<T>(
        &self,
        ms: u64,
        fut: impl Future<Output = Result<T, Failure>>,
        on_timeout: impl FnOnce() -> Failure,
    ) -> Result<T, Failure> {
        if ms == 0 {
            return fut.await;
        }
        let timer = async {
            self.platform.sleep_ns(ms.saturating_mul(1_000_000)).await;
            None
        };
        match futures_lite::future::or(async { Some(fut.await) }, timer).await {
            Some(result) => result,
            None => Err(on_timeout()),
        }
    }

    /// Sends a small request and reads its whole answer within the
    /// request timeout, once.
    pub async fn exchange(
        &self,
        settings: &Settings,
        req: &HttpRequest,
    ) -> Result<(u16, Vec<u8>), Failure> {
        let (status, _, body) = self.exchange_once(settings, req).await?;
        Ok((status, body))
    }

    /// [`Ctx::exchange`], tried again as `retry` allows ([`crate::session::retry`]).
    pub async fn exchange_retrying(
        &self,
        settings: &Settings,
        req: &HttpRequest,
        retry: Retry,
    ) -> Result<(u16, Vec<u8>), Failure> {
        let (status, _, body) = self.exchange_read(settings, req, retry).await?;
        Ok((status, body))
    }

    /// [`Ctx::exchange_retrying`], with the answer's headers (the ones in
    /// [`platform::READ_HEADERS`]).
    pub async fn exchange_read(
        &self,
        settings: &Settings,
        req: &HttpRequest,
        retry: Retry,
    ) -> Result<(u16, Vec<(String, String)>, Vec<u8>), Failure> {
        let started = self.platform.now_ns();
        let mut attempt = 0;
        loop {
            let result = self.exchange_once(settings, req).await;
            let outcome = match &result {
                Ok((status, headers, body)) => Attempt::answer(*status, headers, body),
                Err(f) => Attempt::broken(f),
            };
            if !self
                .wait_to_retry(settings, retry, attempt, outcome, started)
                .await
            {
                return result;
            }
            attempt += 1;
        }
    }

    /// Waits before retry `attempt + 1` of a request first sent at
    /// `started_ns`, if the policy allows one; `false` to give up.
    pub async fn wait_to_retry(
        &self,
        settings: &Settings,
        retry: Retry,
        attempt: u32,
        outcome: Attempt<'_>,
        started_ns: u64,
    ) -> bool {
        let budget = match settings.request_timeout_ms {
            0 => retry::DEFAULT_BUDGET_NS,
            ms => u64::from(ms) * 1_000_000,
        };
        let elapsed = self.platform.now_ns().saturating_sub(started_ns);
        let random = self.platform.random_u64();
        match retry::delay_ns(retry, attempt, outcome, random, elapsed, budget) {
            Some(ns) => {
                self.platform.sleep_ns(ns).await;
                true
            }
            None => false,
        }
    }

    async fn exchange_once(
        &self,
        settings: &Settings,
        req: &HttpRequest,
    ) -> Result<(u16, Vec<(String, String)>, Vec<u8>), Failure> {
        let timeout = settings.request_timeout_ms;
        self.with_deadline(
            u64::from(timeout),
            async {
                let mut resp = self.platform.send(req, timeout).await?;
                let body = resp.body.read_to_end(16 << 20).await?;
                Ok((resp.status, resp.headers, body))
            },
            || Failure::new(ErrorKind::Timeout, crate::errors::REQUEST_TIMEOUT),
        )
        .await
    }

    async fn set_timeout(&self, settings: &Settings, id: &str, ttl: u32) -> Result<(), Failure> {
        let req = api::set_timeout_request(settings, id, ttl)?;
        let (status, body) = self
            .exchange_retrying(settings, &req, Retry::Idempotent)
            .await?;
        api::parse_set_timeout(status, &body, id)
    }

    /// The sandbox for a tool call: the open one (refreshed if less than
    /// half its TTL is left), else a new or attached one.
    pub async fn acquire(&self) -> Result<(Settings, SandboxHandle), Unavailable> {
        self.acquire_in(None).await
    }

    /// [`Ctx::acquire`] in sandbox `target`: `None` (or the session's own
    /// id) is the session's own sandbox, else one of its forks; any other
    /// id is refused (it is not this session's to act in or to kill).
    pub async fn acquire_in(
        &self,
        target: Option<&str>,
    ) -> Result<(Settings, SandboxHandle), Unavailable> {
        let Session {
            settings,
            sandbox,
            keep_alive,
            forks,
            ..
        } = self.snapshot();
        let own = sandbox.filter(|h| target.is_none_or(|id| id == h.id));
        let open = match (own, target) {
            (Some(handle), _) => Some((handle, keep_alive)),
            (None, Some(id)) => match forks.iter().find(|f| f.handle.id == id) {
                Some(fork) => Some((fork.handle.clone(), fork.keep_alive)),
                None => return Err(Unavailable::Expired(not_ours(id))),
            },
            (None, None) => None,
        };
        if let Some((handle, keep_alive)) = open {
            if keep_alive.due(self.platform.now_ns()) {
                match self
                    .set_timeout(&settings, &handle.id, keep_alive.ttl_seconds())
                    .await
                {
                    Ok(()) => {
                        let now = self.platform.now_ns();
                        self.refreshed(&handle.id, now);
                    }
                    Err(f) if f.kind == ErrorKind::SandboxExpired => {
                        self.stopped(&handle.id, StopReason::Gone);
                        return Err(Unavailable::Expired(f));
                    }
                    // A failed refresh is not fatal (as in e2b-adk); the
                    // operation itself reports a dead sandbox.
                    Err(_) => {}
                }
            }
            return Ok((settings, handle));
        }
        let key = api::idempotency_key(self.platform.random_u64());
        let (req, attach) = match &settings.attach_sandbox_id {
            Some(id) => (api::connect_request(&settings, id), Some(id.clone())),
            None => (api::create_request(&settings, &key), None),
        };
        // A server-side failure to create is the sandbox being unavailable.
        let unavailable = |f: Failure| {
            Unavailable::Create(match f.kind {
                ErrorKind::Internal => Failure::new(ErrorKind::SandboxUnavailable, f.message),
                _ => f,
            })
        };
        // Run to the end even if the call is cancelled: a cut create may
        // still make a sandbox nobody would kill.
        let req = req
            .map_err(unavailable)?
            .header(e2b_wire::host_guest::HEADER_FINISH_ON_CANCEL, "1");
        let lives_until = match &attach {
            Some(id) => self.known_expiry(&settings, id).await,
            None => None,
        };
        // The key makes a repeated create answer the first one's sandbox,
        // so a create whose connection broke is retried too.
        let retry = match attach {
            Some(_) => Retry::Idempotent,
            None => Retry::CreateWithKey,
        };
        let (status, body) = self
            .exchange_retrying(&settings, &req, retry)
            .await
            .map_err(unavailable)?;
        let handle = api::parse_sandbox(status, &body, attach.as_deref()).map_err(unavailable)?;
        let now = self.platform.now_ns();
        self.update(|s| {
            s.sandbox = Some(handle.clone());
            s.keep_alive.refreshed(now);
            if let Some(end) = lives_until {
                s.keep_alive.lives_until(end);
            }
        });
        let (origin, template) = match attach {
            Some(_) => (Origin::Attached, String::new()),
            None => (Origin::Created, settings.template.clone()),
        };
        self.started(Report::SandboxStarted {
            sandbox_id: handle.id.clone(),
            template,
            origin,
            // One that pauses at its timeout is left to pause.
            owned: origin == Origin::Created && !settings.pauses(),
            source: None,
        });
        Ok((settings, handle))
    }

    /// Tells the host a sandbox became this session's (`report` is a
    /// [`Report::SandboxStarted`]).
    pub fn started(&self, report: Report) {
        if let Report::SandboxStarted { sandbox_id, .. } = &report {
            self.update(|s| s.stopped.remove(sandbox_id));
        }
        self.platform.report(report);
    }

    /// Tells the host sandbox `id` stopped being this session's, once.
    pub fn stopped(&self, id: &str, reason: StopReason) {
        if self.update(|s| s.stopped.insert(id.to_string())) {
            self.platform.report(Report::SandboxStopped {
                sandbox_id: id.to_string(),
                reason,
            });
        }
    }

    /// Records a refresh of sandbox `id` (the session's own or a fork).
    fn refreshed(&self, id: &str, now_ns: u64) {
        self.update(|s| {
            if let Some(k) = s.keep_alive_of(id) {
                k.refreshed(now_ns);
            }
        });
    }

    /// When a sandbox we are about to attach to ends, on the monotonic
    /// clock, if it can be read (connecting only ever extends it).
    async fn known_expiry(&self, settings: &Settings, id: &str) -> Option<u64> {
        let req = api::detail_request(settings, id).ok()?;
        let (status, body) = self
            .exchange_retrying(settings, &req, Retry::Idempotent)
            .await
            .ok()?;
        let left = api::parse_time_left(status, &body, self.platform.wall_ns())?;
        Some(self.platform.now_ns().saturating_add(left))
    }

    /// Runs `op` while a heartbeat refreshes the sandbox's TTL whenever
    /// less than half of it is left, counted from the last refresh.
    ///
    /// An op known to end within `bound_ms`, before the first beat is due,
    /// runs without one: the pending timer would only cost host calls on
    /// every wakeup of a call that cannot need it.
    pub async fn with_heartbeat<T>(
        &self,
        settings: &Settings,
        id: &str,
        bound_ms: Option<u64>,
        op: impl Future<Output = T>,
    ) -> T {
        let Some(start) = self.update(|s| s.keep_alive_of(id).copied()) else {
            return op.await;
        };
        let keep_alive = Cell::new(start);
        let now = self.platform.now_ns();
        if bound_ms.is_some_and(|ms| {
            now.saturating_add(ms.saturating_mul(1_000_000)) < keep_alive.get().due_at()
        }) {
            return op.await;
        }
        let beat = async {
            loop {
                let wait = keep_alive
                    .get()
                    .due_at()
                    .saturating_sub(self.platform.now_ns());
                if wait > 0 {
                    self.platform.sleep_ns(wait).await;
                }
                let ttl = keep_alive.get().ttl_seconds();
                if self.set_timeout(settings, id, ttl).await.is_ok() {
                    let at = self.platform.now_ns();
                    let mut k = keep_alive.get();
                    k.refreshed(at);
                    keep_alive.set(k);
                    self.refreshed(id, at);
                } else {
                    self.platform.sleep_ns(keep_alive.get().retry_ns()).await;
                }
            }
        };
        futures_lite::future::or(op, beat).await
    }

    /// Makes the sandbox ready before any tool call: creates (or attaches
    /// to) it if none is open, else refreshes it (always: the refresh is
    /// the probe that it still lives). `ttl` overrides the configured TTL
    /// for now (a warm pool holds sandboxes on a short one); `None` gives
    /// the configured TTL, as a pool does when it hands a session out.
    pub async fn prepare(&self, ttl: Option<u32>) -> Result<String, Failure> {
        let session = self.snapshot();
        let settings = session.settings.clone();
        let ttl = ttl.unwrap_or_else(|| settings.ttl_seconds());
        if let Some(handle) = session.sandbox {
            if let Err(f) = self.set_timeout(&settings, &handle.id, ttl).await {
                if f.kind == ErrorKind::SandboxExpired {
                    self.stopped(&handle.id, StopReason::Gone);
                }
                return Err(f);
            }
            let now = self.platform.now_ns();
            self.update(|s| {
                s.keep_alive = KeepAlive::new(ttl);
                s.keep_alive.refreshed(now);
            });
            return Ok(handle.id);
        }
        // Created (or connected) with `ttl`, the configuration kept.
        let configured = settings.configured_ttl;
        self.update(|s| {
            s.settings.configured_ttl = Some(ttl);
            s.keep_alive = KeepAlive::new(ttl);
        });
        let acquired = self.acquire().await;
        self.update(|s| s.settings.configured_ttl = configured);
        match acquired {
            Ok((settings, handle)) => {
                // Its envd answering, then one process run, best effort: a
                // sandbox that starts on first use (the local server's)
                // starts now, and what a first command pays in a fresh
                // sandbox (cold caches, envd's first spawn) is paid here,
                // not by the first call.
                let health = envd::sandbox_request(
                    &settings,
                    &handle,
                    e2b_wire::ENVD_PORT,
                    crate::protocol::request::Method::Get,
                    "/health",
                );
                let _ = self.exchange(&settings, &health).await;
                let warm_up = envd::StartSpec {
                    command: "true".into(),
                    cwd: None,
                    envs: Default::default(),
                    timeout_ms: Some(WARM_UP_MS),
                };
                let warm_up = envd::start_request(&settings, &handle, &warm_up);
                let _ = self.exchange(&settings, &warm_up).await;
                // And the code interpreter: where its kernels start with the
                // sandbox (the local server's), a first `run_code` would wait
                // for them; an empty cell waits here instead (a template
                // without an interpreter just answers an error).
                let cell = crate::protocol::interpreter::execute_request(
                    &settings,
                    &handle,
                    "",
                    "python",
                    &Default::default(),
                );
                let _ = self.exchange(&settings, &cell).await;
                Ok(handle.id)
            }
            Err(Unavailable::Create(f) | Unavailable::Expired(f)) => Err(f),
        }
    }

    /// Kills the sandbox and the forks it owns (or leaves them to pause)
    /// and forgets them; keeps what it could not kill so the call can be
    /// retried. Forks go first: a session is never left with forks and
    /// without its own sandbox.
    pub async fn shutdown(&self) -> Result<bool, Failure> {
        let session = self.snapshot();
        let pauses = session.settings.pauses();
        for fork in &session.forks {
            let reason = if fork.owned && !pauses {
                let killed = self.kill(&session.settings, &fork.handle.id).await?;
                killed_or_gone(killed)
            } else {
                StopReason::Released
            };
            self.update(|s| s.forks.retain(|f| f.handle.id != fork.handle.id));
            self.stopped(&fork.handle.id, reason);
        }
        let Some(handle) = session.sandbox else {
            return Ok(false);
        };
        if pauses {
            self.update(|s| s.sandbox = None);
            self.stopped(&handle.id, StopReason::Released);
            return Ok(false);
        }
        let killed = self.kill(&session.settings, &handle.id).await?;
        self.update(|s| {
            s.sandbox = None;
            s.keep_alive = KeepAlive::new(s.settings.ttl_seconds());
        });
        self.stopped(&handle.id, killed_or_gone(killed));
        Ok(killed)
    }

    /// Kills sandbox `id` by its id (the host's reaper: WIT `kill`); one
    /// of this session's is forgotten and reported stopped (another's is
    /// not: its host knows what it asked).
    pub async fn kill_by_id(&self, id: &str) -> Result<bool, Failure> {
        let settings = self.read(|s| s.settings.clone());
        let killed = self.kill(&settings, id).await?;
        let ours = self.update(|s| {
            let own = s.sandbox.as_ref().is_some_and(|h| h.id == id);
            if own {
                s.sandbox = None;
                s.keep_alive = KeepAlive::new(s.settings.ttl_seconds());
            }
            let forks = s.forks.len();
            s.forks.retain(|f| f.handle.id != id);
            own || s.forks.len() < forks
        });
        // Only its own stop is the instance's to report.
        if ours {
            self.stopped(id, killed_or_gone(killed));
        }
        Ok(killed)
    }

    /// Kills sandbox `id`: `false` when E2B no longer knew it.
    pub async fn kill(&self, settings: &Settings, id: &str) -> Result<bool, Failure> {
        let req = api::kill_request(settings, id)?
            .header(e2b_wire::host_guest::HEADER_FINISH_ON_CANCEL, "1");
        let (status, body) = self
            .exchange_retrying(settings, &req, Retry::Idempotent)
            .await?;
        api::parse_kill(status, &body)
    }
}

/// A kill's answer as a stop: `false` means E2B no longer knew it.
fn killed_or_gone(killed: bool) -> StopReason {
    if killed {
        StopReason::Killed
    } else {
        StopReason::Gone
    }
}

#[cfg(target_arch = "wasm32")]
pub use component::*;

/// The component's one session, on `wasi:http` and `wasi:clocks`.
#[cfg(target_arch = "wasm32")]
mod component {
    use super::http::Wasi;
    use super::*;

    thread_local! {
        static SESSION: Rc<RefCell<Session>> =
            Rc::new(RefCell::new(Session::new(Settings::from_env(env_var))));
    }

    /// Reads a host environment variable.
    pub fn env_var(name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    /// The instance's session on the host's platform, reporting events
    /// with `report`.
    pub fn wasi(report: fn(report::Report)) -> Ctx<Wasi> {
        Ctx {
            platform: Wasi { report },
            session: SESSION.with(Rc::clone),
        }
    }
}

#[cfg(test)]
mod call_tests;

#[cfg(test)]
mod fork_tests;

#[cfg(test)]
mod report_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_include_key_and_tokens() {
        let settings = Settings::resolve(
            crate::config::ConfigInput {
                api_key: Some("e2b_secretkey".into()),
                ..Default::default()
            },
            |_| None,
        )
        .unwrap();
        let mut s = Session::new(settings);
        s.sandbox = Some(SandboxHandle {
            id: "x".into(),
            access_token: Some("tok-abcdef".into()),
            traffic_token: None,
            domain: None,
            envd_version: "0.6.13".into(),
        });
        assert_eq!(s.secrets().as_slice(), ["e2b_secretkey", "tok-abcdef"]);
    }
}
