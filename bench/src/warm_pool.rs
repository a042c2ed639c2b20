//! (11) The first call of a new session with E2B's create latency (the
//! local server's `Fault::Delay` of 400 ms on every create): without and
//! with a warm pool, in the host library and through `mcp --http`, against
//! a warm call of an open session; the same for a stateless call that
//! names no sandbox (`StatelessPool`) against one by id; and what a
//! waiting pooled session costs.

use super::*;
use e2b_tools_host::{PoolStats, StatelessPool, WarmPool};

/// E2B's create-to-ready latency at the median (public leaderboards).
pub(crate) const CREATE_DELAY: Duration = Duration::from_millis(400);
/// First calls measured per row.
const FIRST_CALLS: usize = 20;
/// The pool's size in this section.
const POOL_SIZE: usize = 2;

/// One run's figures.
#[derive(Default)]
pub(crate) struct PoolRow {
    pub(crate) library_fresh: Percentiles,
    pub(crate) library_pooled: Percentiles,
    pub(crate) library_warm: Percentiles,
    pub(crate) mcp_fresh: Percentiles,
    pub(crate) mcp_pooled: Percentiles,
    pub(crate) mcp_warm: Percentiles,
    pub(crate) stateless_fresh: Percentiles,
    pub(crate) stateless_pooled: Percentiles,
    pub(crate) stateless_warm: Percentiles,
    pub(crate) waiting_kib_each: f64,
    pub(crate) held: usize,
}

fn slow_creates(server: &LocalServer) {
    server.faults().inject(e2b_local::FaultRule {
        method: None,
        path_prefix: "/v2/sandboxes$".into(),
        times: usize::MAX,
        fault: e2b_local::Fault::Delay(CREATE_DELAY),
    });
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn filled(stats: impl Fn() -> PoolStats, n: usize) -> Result<(), Failure> {
    let until = Instant::now() + Duration::from_secs(60);
    while stats().waiting < n {
        if Instant::now() > until {
            return Err(host(format!("the pool never filled: {:?}", stats())));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Waits until `count()` reaches `n` (a minute at most).
async fn executions_reach(count: impl Fn() -> u64, n: u64) -> Result<(), Failure> {
    let until = Instant::now() + Duration::from_secs(60);
    while count() < n {
        if Instant::now() > until {
            return Err(host(format!(
                "the MCP server's pool never filled: {} of {n} cells",
                count()
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// A session's first `run_command`, from `open` to its result.
async fn first_call(session: Session, started: Instant) -> Result<Duration, Failure> {
    call_ok(&session, "run_command", &json!({"command": "true"})).await?;
    let took = started.elapsed();
    session.shutdown().await.map_err(host)?;
    Ok(took)
}

pub(crate) async fn pool_cost(
    runtime: &Runtime,
    server: &LocalServer,
    env: &BTreeMap<String, String>,
    report: &mut Report,
) -> Result<(), Failure> {
    slow_creates(server);
    let outcome = measure(runtime, server, env).await;
    server.faults().clear();
    report.pool = Some(outcome?);
    Ok(())
}

async fn measure(
    runtime: &Runtime,
    server: &LocalServer,
    env: &BTreeMap<String, String>,
) -> Result<PoolRow, Failure> {
    let options = SessionOptions {
        env: env.clone(),
        ..SessionOptions::default()
    };
    let mut row = PoolRow::default();
    let (mut fresh, mut pooled, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    let before = rss_kib();
    let pool = WarmPool::start(runtime, options.clone(), POOL_SIZE).map_err(host)?;
    filled(|| pool.stats(), POOL_SIZE).await?;
    row.waiting_kib_each = rss_kib().saturating_sub(before) as f64 / POOL_SIZE as f64;
    row.held = server.stats().live_sandboxes;
    for _ in 0..FIRST_CALLS {
        let started = Instant::now();
        let session = Session::open(runtime, options.clone())
            .await
            .map_err(host)?;
        fresh.push(first_call(session, started).await?);
        filled(|| pool.stats(), POOL_SIZE).await?;
        let started = Instant::now();
        let session = pool.session().await.map_err(host)?;
        call_ok(&session, "run_command", &json!({"command": "true"})).await?;
        pooled.push(started.elapsed());
        let started = Instant::now();
        call_ok(&session, "run_command", &json!({"command": "true"})).await?;
        warm.push(started.elapsed());
        session.shutdown().await.map_err(host)?;
    }
    pool.close().await;
    row.library_fresh = Percentiles::of(fresh);
    row.library_pooled = Percentiles::of(pooled);
    row.library_warm = Percentiles::of(warm);
    stateless_first_calls(env, &mut row).await?;

    let plain = HttpServer::start_with(env, &[]).await?;
    let size = POOL_SIZE.to_string();
    let warmed = HttpServer::start_with(env, &["--warm-pool", &size]).await?;
    let outcome = async {
        let (mut fresh, mut pooled, mut warm) = (Vec::new(), Vec::new(), Vec::new());
        let call = |id| tool_call(id, "run_command", json!({"command": "true"}));
        // A pooled sandbox is ready once its interpreter answered the
        // pool's empty cell (nothing else here runs code): wait for the
        // pool's two, then for each refill, as the library's rows do.
        let executed = || server.stats().count("POST /execute");
        // The pool's two, then one refill after each sample.
        let first_ready = executed() + POOL_SIZE as u64;
        for i in 0..FIRST_CALLS as u64 {
            // The session opens its instance and sandbox on its first
            // tools/call, which is what is timed (initialize comes before).
            let session = plain.session().await?;
            let started = Instant::now();
            plain.call(&session, &call(10 + i)).await?;
            fresh.push(started.elapsed());
            // The pool refills meanwhile (one create each).
            executions_reach(executed, first_ready + i).await?;
            let session = warmed.session().await?;
            let started = Instant::now();
            warmed.call(&session, &call(100 + i)).await?;
            pooled.push(started.elapsed());
            let started = Instant::now();
            warmed.call(&session, &call(200 + i)).await?;
            warm.push(started.elapsed());
        }
        Ok::<_, Failure>((fresh, pooled, warm))
    }
    .await;
    plain.stop().await;
    warmed.stop().await;
    let (fresh, pooled, warm) = outcome?;
    row.mcp_fresh = Percentiles::of(fresh);
    row.mcp_pooled = Percentiles::of(pooled);
    row.mcp_warm = Percentiles::of(warm);
    Ok(row)
}

/// A stateless call of `run_command` that names no sandbox: without a pool
/// (it creates one), with one (`StatelessPool::call`), and by the id of the
/// sandbox it ran in (warm). Each sandbox is closed after its samples.
async fn stateless_first_calls(
    env: &BTreeMap<String, String>,
    row: &mut PoolRow,
) -> Result<(), Failure> {
    let (runtime, options) = load_stateless(env).await?;
    let pool = StatelessPool::start(&runtime, options.clone(), POOL_SIZE).map_err(host)?;
    let command = json!({"command": "true"});
    let (mut fresh, mut pooled, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    let outcome = async {
        for _ in 0..FIRST_CALLS {
            let started = Instant::now();
            let made = runtime
                .call(&options, "run_command", &command)
                .await
                .map_err(host)?;
            fresh.push(started.elapsed());
            let made = check_success("run_command", made)?;
            filled(|| pool.stats(), POOL_SIZE).await?;
            let started = Instant::now();
            let taken = pool.call("run_command", &command).await.map_err(host)?;
            pooled.push(started.elapsed());
            let taken = check_success("run_command", taken)?;
            let by_id = json!({"command": "true", "sandbox_id": taken["sandbox_id"]});
            let started = Instant::now();
            let again = runtime
                .call(&options, "run_command", &by_id)
                .await
                .map_err(host)?;
            warm.push(started.elapsed());
            check_success("run_command", again)?;
            for id in [&made["sandbox_id"], &taken["sandbox_id"]] {
                let close = json!({"sandbox_id": id});
                let closed = runtime
                    .call(&options, "close_sandbox", &close)
                    .await
                    .map_err(host)?;
                check_success("close_sandbox", closed)?;
            }
        }
        Ok::<_, Failure>(())
    }
    .await;
    pool.close().await;
    outcome?;
    row.stateless_fresh = Percentiles::of(fresh);
    row.stateless_pooled = Percentiles::of(pooled);
    row.stateless_warm = Percentiles::of(warm);
    Ok(())
}

impl PoolRow {
    /// Each client's rows: its name, fresh, pooled and warm first calls.
    fn rows(&self) -> [(&'static str, &Percentiles, &Percentiles, &Percentiles); 3] {
        [
            (
                "host library",
                &self.library_fresh,
                &self.library_pooled,
                &self.library_warm,
            ),
            (
                "`mcp --http`",
                &self.mcp_fresh,
                &self.mcp_pooled,
                &self.mcp_warm,
            ),
            (
                "stateless call (host library)",
                &self.stateless_fresh,
                &self.stateless_pooled,
                &self.stateless_warm,
            ),
        ]
    }

    /// Each client's pooled first call over its warm call, at p50.
    pub(crate) fn ratios(&self) -> Vec<(&'static str, f64)> {
        self.rows()
            .into_iter()
            .map(|(name, _, pooled, warm)| (name, ratio(pooled.p50, warm.p50)))
            .collect()
    }

    pub(crate) fn markdown(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\n## 11. The first call, with a warm pool\n\nEvery sandbox creation takes \
             {} ms more (the local server's `Fault::Delay`, E2B's create latency at the \
             median). A new session's first `run_command` of `true` to its result (library: \
             from `Session::open` or `WarmPool::session`; MCP: the session's first \
             `tools/call`, after its `initialize`, which opens its instance), without a pool, and with one of {POOL_SIZE} sandboxes made ahead (`WarmPool::session`; \
             `mcp --http --warm-pool {POOL_SIZE}`), refilled between samples; then the same \
             session's second call (warm). A stateless call (a fresh instance per call, as \
             plugin hosts make) that names no sandbox: without a pool it creates one; with \
             `StatelessPool` ({POOL_SIZE} made ahead) it runs in a waiting one; warm is the \
             next call by that sandbox's id. {} samples each, interleaved.\n",
            CREATE_DELAY.as_millis(),
            self.library_fresh.samples
        );
        let _ = writeln!(
            out,
            "| client | first call, no pool p50 / p95 | first call, pooled p50 / p95 | warm call p50 / p95 | pooled / warm p50 |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        for (name, fresh, pooled, warm) in self.rows() {
            let _ = writeln!(
                out,
                "| {name} | {} / {} | {} / {} | {} / {} | {:.2} |",
                ms(fresh.p50),
                ms(fresh.p95),
                ms(pooled.p50),
                ms(pooled.p95),
                ms(warm.p50),
                ms(warm.p95),
                ratio(pooled.p50, warm.p50),
            );
        }
        let _ = writeln!(
            out,
            "\nA waiting pooled session costs {:.0} KiB of this process's RSS (its instance; \
             the sandbox is the server's) and holds one sandbox: {} sandboxes were live with \
             the pool full. On E2B an idle pooled sandbox is billed as any running one, for \
             the time it waits: a pool of N costs N sandboxes' running time, refreshed on a \
             {}-second timeout so a crashed host leaves them at most that long.",
            self.waiting_kib_each,
            self.held,
            e2b_tools_host::WAITING_TIMEOUT,
        );
    }
}
