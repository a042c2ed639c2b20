//! (9) The production path's cost: `read_file` over TLS through a CONNECT
//! proxy (the local server's TLS face as `api.e2b.app` and
//! `sandbox.e2b.app`, with only `E2B_API_KEY` set) next to the same call
//! over plain loopback HTTP, samples interleaved in one child process.
//!
//! A child, because the test CA reaches the host's trust store only
//! through `SSL_CERT_FILE`, read from the environment, which this process
//! must not change while its threads run.

use super::*;
use e2b_local::edge::{tls_server, Leaf, ProxyMode, TestCa, TunnelProxy};
use e2b_tools_host::{Proxy, RuntimeOptions};

/// Both sides, and what went through the proxy.
pub(crate) struct TlsRow {
    pub(crate) plain: Percentiles,
    pub(crate) tls: Percentiles,
    /// Calls made on the TLS side, warm-up included.
    pub(crate) calls: usize,
    /// Requests the TLS face saw, and the tunnels the proxy opened.
    pub(crate) requests: usize,
    pub(crate) tunnels: usize,
}

/// What the parent tells the child.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct TlsProbe {
    samples: usize,
    proxy: String,
    /// The production side's key (its only `E2B_*` variable).
    tls_key: String,
    /// The plain side's environment.
    plain_env: BTreeMap<String, String>,
}

pub(crate) async fn tls_cost(
    plan: &Plan,
    env: &BTreeMap<String, String>,
    report: &mut Report,
) -> Result<(), Failure> {
    let ca = TestCa::new();
    let server = tls_server(&ca, Leaf::Valid, 1.0).await;
    let proxy = TunnelProxy::start(ProxyMode::Forward(server.addr())).await;
    let probe = TlsProbe {
        samples: plan.latency_samples,
        proxy: proxy.url(),
        tls_key: server.api_key().to_string(),
        plain_env: env.clone(),
    };
    let exe = std::env::current_exe().map_err(host)?;
    let mut child = Command::new(exe);
    child
        .arg("--probe-tls")
        .arg(serde_json::to_string(&probe).map_err(host)?)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SSL_CERT_FILE", ca.file());
    let value = json_child(child, "the TLS probe").await?;
    let percentiles = |side: &str| Percentiles {
        p50: Duration::from_micros(value[side]["p50_us"].as_u64().unwrap_or(0)),
        p95: Duration::from_micros(value[side]["p95_us"].as_u64().unwrap_or(0)),
        samples: value[side]["samples"].as_u64().unwrap_or(0) as usize,
    };
    report.tls = Some(TlsRow {
        plain: percentiles("plain"),
        tls: percentiles("tls"),
        calls: value["tls_calls"].as_u64().unwrap_or(0) as usize,
        requests: server.take_requests().len(),
        tunnels: proxy.connects().len(),
    });
    server.shutdown().await;
    Ok(())
}

/// The child: one runtime (its proxy for everything not on loopback), a
/// session per side, warm-up, then interleaved samples; prints one JSON line.
pub(crate) async fn probe_tls(probe: &str) -> Result<u8, Failure> {
    let outcome = async {
        let probe: TlsProbe = serde_json::from_str(probe).map_err(host)?;
        let options = RuntimeOptions {
            proxy: Proxy::Url(probe.proxy.clone()),
            ..RuntimeOptions::default()
        };
        let runtime = tokio::task::spawn_blocking(move || {
            Runtime::load_with(ComponentSource::Embedded, options)
        })
        .await
        .map_err(host)?
        .map_err(host)?;
        let tls_env = BTreeMap::from([("E2B_API_KEY".to_string(), probe.tls_key.clone())]);
        let plain = open_session(&runtime, &probe.plain_env).await?;
        let tls = open_session(&runtime, &tls_env).await?;
        let write = json!({"path": BENCH_FILE, "content": TEN_BYTES});
        let warm_up = probe.samples / 10 + 1;
        for session in [&plain, &tls] {
            call_ok(session, "write_file", &write).await?;
            for _ in 0..warm_up {
                call_ok(session, "read_file", &read_args()).await?;
            }
        }
        let mut samples = [Vec::new(), Vec::new()];
        for _ in 0..probe.samples {
            for (side, session) in [&plain, &tls].into_iter().enumerate() {
                let started = Instant::now();
                let result = session.call_json("read_file", &read_args()).await;
                samples[side].push(started.elapsed());
                check_success("read_file", result.map_err(host)?)?;
            }
        }
        let _ = plain.shutdown().await;
        let _ = tls.shutdown().await;
        let [plain, tls] = samples.map(Percentiles::of);
        let side = |p: &Percentiles| {
            json!({"p50_us": p.p50.as_micros() as u64, "p95_us": p.p95.as_micros() as u64,
                   "samples": p.samples})
        };
        Ok::<Value, Failure>(json!({
            "plain": side(&plain),
            "tls": side(&tls),
            "tls_calls": 1 + warm_up + probe.samples,
        }))
    }
    .await;
    let line = outcome.unwrap_or_else(|err| json!({"error": format!("{err:#}")}));
    print_stdout(&format!("{line}\n"))?;
    Ok(0)
}

impl TlsRow {
    pub(crate) fn markdown(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\n## 9. The production path: TLS through a proxy\n\n`read_file` of a 10-byte \
             file with only `E2B_API_KEY` set: the default `https://api.e2b.app` and \
             `https://sandbox.e2b.app`, reached through a CONNECT proxy (`--proxy`) that \
             sends every tunnel to the local server's TLS face (a test CA in \
             `SSL_CERT_FILE`); next to the same call over plain loopback HTTP to the same \
             kind of server. One process, one runtime, samples interleaved, {} each.\n",
            self.tls.samples
        );
        let _ = writeln!(out, "| path | p50 / p95 |");
        let _ = writeln!(out, "|---|---|");
        for (name, p) in [
            ("plain HTTP, loopback", &self.plain),
            ("TLS through the proxy", &self.tls),
        ] {
            let _ = writeln!(out, "| {name} | {} / {} |", ms(p.p50), ms(p.p95));
        }
        let _ = writeln!(
            out,
            "\nTLS through the proxy costs {:.2}× the plain call at p50. Connections are \
             pooled through their tunnels: the proxy opened {} CONNECT tunnels for {} calls \
             ({} requests).",
            ratio(self.tls.p50, self.plain.p50),
            self.tunnels,
            self.calls,
            self.requests
        );
    }
}
