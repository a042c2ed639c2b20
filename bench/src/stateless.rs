//! (7) What a stateless call costs: the stateless component in a fresh
//! instance per call (as plugin hosts run it), connecting to its sandbox by
//! id, next to the embedding component's open session, for the same
//! `read_file`, samples interleaved so both see the same machine.

use super::*;

/// The two sides of one comparison.
#[derive(Default)]
pub(crate) struct StatelessRow {
    pub(crate) stateful: Percentiles,
    pub(crate) stateless: Percentiles,
    pub(crate) stateful_requests: RequestCounts,
    pub(crate) stateless_requests: RequestCounts,
}

pub(crate) async fn stateless_cost(
    plan: &Plan,
    runtime: &Runtime,
    server: &LocalServer,
    env: &BTreeMap<String, String>,
    report: &mut Report,
) -> Result<(), Failure> {
    let (stateless, options) = load_stateless(env).await?;
    let session = open_session(runtime, env).await?;
    let outcome = async {
        write_bench_file(&session).await?;
        let created = stateless
            .call(
                &options,
                "write_file",
                &json!({"path": BENCH_FILE, "content": TEN_BYTES}),
            )
            .await
            .map_err(host)?;
        let created = check_success("write_file", created)?;
        let id = created["sandbox_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let by_id = json!({"sandbox_id": id, "path": BENCH_FILE});
        let stateless_read = || async {
            let result = stateless
                .call(&options, "read_file", &by_id)
                .await
                .map_err(host)?;
            check_success("read_file", result)
        };
        for _ in 0..plan.latency_samples / 10 + 1 {
            call_ok(&session, "read_file", &read_args()).await?;
            stateless_read().await?;
        }
        let mut row = StatelessRow::default();
        let (mut warm, mut fresh) = (Vec::new(), Vec::new());
        for _ in 0..plan.latency_samples {
            let started = Instant::now();
            call_ok(&session, "read_file", &read_args()).await?;
            warm.push(started.elapsed());
            let started = Instant::now();
            stateless_read().await?;
            fresh.push(started.elapsed());
        }
        row.stateful = Percentiles::of(warm);
        row.stateless = Percentiles::of(fresh);
        let before = server.stats();
        for _ in 0..COUNTED_CALLS {
            call_ok(&session, "read_file", &read_args()).await?;
        }
        let between = server.stats();
        for _ in 0..COUNTED_CALLS {
            stateless_read().await?;
        }
        row.stateful_requests = RequestCounts::between(&before, &between);
        row.stateless_requests = RequestCounts::between(&between, &server.stats());
        let closed = stateless
            .call(&options, "close_sandbox", &json!({"sandbox_id": id}))
            .await
            .map_err(host)?;
        check_success("close_sandbox", closed)?;
        report.stateless = Some(row);
        Ok(())
    }
    .await;
    let _ = session.shutdown().await;
    outcome
}

impl StatelessRow {
    pub(crate) fn markdown(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\n## 7. A stateless call (plugin hosts)\n\n`read_file` of a 10-byte file: (b) the \
             embedding component's open session; (s) the stateless component as wassette runs \
             it, a fresh instance per call that connects to its sandbox by id \
             (`StatelessRuntime::call`: instantiate, `GET /sandboxes/{{id}}` for its end time, \
             `POST /v2/sandboxes/{{id}}/connect`, the read). Samples interleaved, {} each; \
             requests over {COUNTED_CALLS} calls each.\n",
            self.stateful.samples
        );
        let _ = writeln!(
            out,
            "| call | p50 / p95 | all requests / call | requests in the run |"
        );
        let _ = writeln!(out, "|---|---|---|---|");
        for (name, latency, counts) in [
            (
                "(b) embedding, open session",
                &self.stateful,
                &self.stateful_requests,
            ),
            (
                "(s) stateless, by id",
                &self.stateless,
                &self.stateless_requests,
            ),
        ] {
            let _ = writeln!(
                out,
                "| {name} | {} / {} | {:.2} | {} |",
                ms(latency.p50),
                ms(latency.p95),
                counts.all as f64 / COUNTED_CALLS as f64,
                counts.routes_text()
            );
        }
        let _ = writeln!(
            out,
            "\n(s)/(b) p50: {:.1}.",
            ratio(self.stateless.p50, self.stateful.p50)
        );
    }
}
