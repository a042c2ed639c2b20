//! Lifecycle events and the end of a session: events in order with their
//! fields, subscribers that panic or block costing nothing but their own
//! events, the per-call span, and the sandbox of a session (or runtime)
//! dropped without a shutdown killed.

use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use e2b_tools_host::{
    ComponentSource, Event, EventKind, Runtime, SandboxConfig, Session, SessionOptions,
};
use serde_json::json;

use crate::harness::{call, env_for, ok, runtime, server, session, session_with};

/// A subscriber that sends each event down a channel.
fn collector() -> (impl Fn(&Event) + Send + Sync + 'static, Receiver<Event>) {
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    (
        move |e: &Event| drop(tx.lock().unwrap().send(e.clone())),
        rx,
    )
}

/// The next `n` events.
fn next(rx: &Receiver<Event>, n: usize) -> Vec<Event> {
    (0..n)
        .map(|i| {
            rx.recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("event {i} of {n} did not arrive"))
        })
        .collect()
}

/// Polls until the server has no live sandbox, for up to `seconds`.
async fn until_no_sandbox(server: &e2b_local::LocalServer, seconds: u64) -> usize {
    for _ in 0..seconds * 20 {
        if server.stats().live_sandboxes == 0 {
            return 0;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stats().live_sandboxes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_arrive_in_order_with_their_fields_and_bad_subscribers_break_nothing() {
    let server = server().await;
    let s = session(&server).await;
    let (seen, events) = collector();
    let mine = s.subscribe(seen).unwrap();
    // One that panics on every event, one that never returns: both on the
    // session, so they see exactly its events.
    let panics = s
        .subscribe(|_: &Event| panic!("a subscriber's bug"))
        .unwrap();
    let (_never, stuck) = channel::<()>();
    let stuck = Mutex::new(stuck);
    let blocks = s
        .subscribe(move |_: &Event| {
            let _ = stuck.lock().unwrap().recv();
        })
        .unwrap();

    let secret = "marker-in-arguments-7731";
    let first = ok(call(&s, "run_code", json!({"code": format!("x = '{secret}'")})).await);
    assert_eq!(first["error"], "");
    let missing = s.read_file("/home/user/missing.txt").await.unwrap();
    assert!(missing.is_err());
    assert!(s.shutdown().await.unwrap());

    let got = next(&events, 6);
    let kinds: Vec<EventKind> = got.iter().map(|e| e.kind).collect();
    use EventKind::*;
    assert_eq!(
        kinds,
        [
            SandboxStart,
            ExecStart,
            ExecEnd,
            ExecStart,
            ExecEnd,
            SandboxStop
        ]
    );
    // The component reports the sandbox the moment it has it, before the
    // call that made it begins its work: the first start carries its id.
    let sandbox = got[0].sandbox_id.clone().expect("the new sandbox's id");
    assert_eq!(got[0].detail.as_deref(), Some("created"));
    assert!(got.iter().all(|e| e.session == s.id()));
    assert_eq!(got[1].tool.as_deref(), Some("run_code"));
    assert_eq!(got[1].sandbox_id.as_deref(), Some(sandbox.as_str()));
    assert_eq!(
        (got[2].success, got[2].sandbox_id.as_deref()),
        (Some(true), Some(sandbox.as_str()))
    );
    assert!(got[2].duration.unwrap() > Duration::ZERO);
    assert_eq!(got[4].tool.as_deref(), Some("read_file"));
    assert_eq!(
        (got[4].success, got[4].error_kind.as_deref()),
        (Some(false), Some("not-found"))
    );
    assert_eq!(got[5].detail.as_deref(), Some("shutdown"));
    assert_eq!(got[5].success, Some(true), "killed");
    assert_eq!(got[5].sandbox_id.as_deref(), Some(sandbox.as_str()));
    for event in &got {
        let text = serde_json::to_string(event).unwrap();
        assert!(!text.contains(secret), "an argument in an event: {text}");
        assert!(!text.contains(server.api_key()), "the key in an event");
    }
    assert_eq!(mine.dropped(), 0);
    // The panicking subscriber lost all six, the blocked one holds one
    // and queues the rest; the calls above were unaffected.
    for _ in 0..100 {
        if panics.dropped() == 6 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!((panics.dropped(), panics.delivered()), (6, 0));
    assert_eq!((blocks.dropped(), blocks.delivered()), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_dropped_without_shutdown_has_its_sandbox_killed() {
    let server = server().await;
    let s = session(&server).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    let (seen, events) = collector();
    runtime().subscribe(seen).unwrap();
    let id = s.id();
    assert_eq!(server.stats().live_sandboxes, 1);
    drop(s);
    assert_eq!(until_no_sandbox(&server, 10).await, 0);
    let stop = std::iter::from_fn(|| events.recv_timeout(Duration::from_secs(10)).ok())
        .find(|e| e.session == id)
        .expect("the stop event");
    assert_eq!(
        (stop.kind, stop.detail.as_deref(), stop.success),
        (EventKind::SandboxStop, Some("dropped"), Some(true))
    );

    // A sandbox the session attached to is not its to kill.
    let owner = session(&server).await;
    ok(call(&owner, "run_command", json!({"command": "true"})).await);
    let sandbox = owner.sandbox_id().unwrap();
    let config = SandboxConfig {
        sandbox_id: Some(sandbox.clone()),
        ..SandboxConfig::default()
    };
    let attached = session_with(&server, config, 1.0).await;
    ok(call(&attached, "run_command", json!({"command": "true"})).await);
    drop(attached);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(server.stats().live_sandboxes, 1, "{sandbox} is still there");
    assert!(owner.shutdown().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_runtime_waits_until_its_dropped_sessions_sandboxes_are_killed() {
    let server = server().await;
    let own = Runtime::load(ComponentSource::Embedded).unwrap();
    let options = SessionOptions {
        env: env_for(&server),
        ..SessionOptions::default()
    };
    let sessions = [
        Session::open(&own, options.clone()).await.unwrap(),
        Session::open(&own, options).await.unwrap(),
    ];
    for s in &sessions {
        ok(call(s, "run_code", json!({"code": "1"})).await);
    }
    assert_eq!(server.stats().live_sandboxes, 2);
    drop(sessions);
    // No polling: the drop itself waited for both kills.
    tokio::task::spawn_blocking(move || drop(own))
        .await
        .unwrap();
    assert_eq!(server.stats().live_sandboxes, 0);
}

/// A span's name and its recorded fields (the first is `#id`).
type SpanRecord = (String, Vec<(String, String)>);

/// The spans the test's thread opened, and the audit trail's messages.
#[derive(Default, Clone)]
struct Spans(Arc<Mutex<Vec<SpanRecord>>>, Arc<Mutex<Vec<String>>>);

struct FieldText<'a>(&'a mut Vec<(String, String)>);

impl tracing::field::Visit for FieldText<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0
            .push((field.name().to_string(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push((field.name().to_string(), value.to_string()));
    }
}

impl<S> tracing_subscriber::Layer<S> for Spans
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = vec![("#id".to_string(), id.into_u64().to_string())];
        attrs.record(&mut FieldText(&mut fields));
        let name = attrs.metadata().name().to_string();
        self.0.lock().unwrap().push((name, fields));
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if event.metadata().target() == e2b_tools_host::AUDIT_TARGET {
            let mut fields = Vec::new();
            event.record(&mut FieldText(&mut fields));
            let message = fields.into_iter().find(|(name, _)| name == "message");
            self.1.lock().unwrap().extend(message.map(|(_, text)| text));
        }
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut spans = self.0.lock().unwrap();
        let key = id.into_u64().to_string();
        if let Some((_, fields)) = spans.iter_mut().rev().find(|(_, f)| f[0].1 == key) {
            values.record(&mut FieldText(fields));
        }
    }
}

#[tokio::test]
async fn every_call_runs_in_an_execute_tool_span_and_the_audit_trail_follows_the_events() {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    // This test's thread only: the current-thread runtime runs everything here.
    let _guard = tracing::subscriber::set_default(subscriber);
    // Tests run beside this one meet the audit's callsites on threads
    // without a subscriber (a reaper's, a pool's), racing this thread's
    // scoped one: the interest they cache then hides the events here.
    // Rebuilt before each step (scoped dispatchers are for tests; a host's
    // subscriber is global, and sees every event).
    let settle = tracing::callsite::rebuild_interest_cache;
    let server = server().await;
    settle();
    let s = session(&server).await;
    settle();
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    settle();
    let missing = s.read_file("/nope").await.unwrap();
    assert!(missing.is_err());
    let sandbox = s.sandbox_id().unwrap();
    settle();
    s.shutdown().await.unwrap();

    let audit = spans.1.lock().unwrap().clone();
    assert_eq!(
        audit,
        [
            "session opened",
            "sandbox created",
            "tool call started",
            "tool call finished",
            "tool call started",
            "tool call finished",
            "sandbox shut down",
        ]
    );
    let spans = spans.0.lock().unwrap().clone();
    let calls: Vec<_> = spans
        .iter()
        .filter(|(name, _)| name == "execute_tool")
        .map(|(_, fields)| {
            let get = |k: &str| {
                fields
                    .iter()
                    .rev()
                    .find(|(name, _)| name == k)
                    .map(|(_, v)| v.clone())
            };
            (
                get("gen_ai.tool.name"),
                get("e2b.success"),
                get("e2b.sandbox_id"),
                get("e2b.error_kind"),
                get("otel.name"),
            )
        })
        .collect();
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        calls,
        [
            (
                some("run_command"),
                some("true"),
                Some(sandbox.clone()),
                None,
                some("execute_tool run_command")
            ),
            (
                some("read_file"),
                some("false"),
                Some(sandbox),
                some("not-found"),
                some("execute_tool read_file")
            ),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_killed_behind_the_sessions_back_is_reported_gone_once() {
    let server = server().await;
    let s = session(&server).await;
    ok(call(&s, "run_command", json!({"command": "true"})).await);
    let sandbox = s.sandbox_id().unwrap();
    let (seen, events) = collector();
    let _mine = s.subscribe(seen).unwrap();
    server.faults().expire_now(&sandbox);
    // Found out by the next call, and by every later one; told once.
    for _ in 0..2 {
        let result = call(&s, "run_command", json!({"command": "true"})).await;
        assert_eq!(result["success"], false, "{result}");
    }
    let got: Vec<Event> =
        std::iter::from_fn(|| events.recv_timeout(Duration::from_secs(2)).ok()).collect();
    let stops: Vec<&Event> = got
        .iter()
        .filter(|e| e.kind == EventKind::SandboxStop)
        .collect();
    assert_eq!(stops.len(), 1, "{got:?}");
    assert_eq!(
        (stops[0].detail.as_deref(), stops[0].success),
        (Some("gone"), Some(false))
    );
    assert_eq!(stops[0].sandbox_id.as_deref(), Some(sandbox.as_str()));
    // It is no longer the session's, nor its to kill; its calls keep
    // failing (never a new sandbox behind the caller's back).
    assert!(s.owned_sandboxes().is_empty());
    assert_eq!(s.sandbox_id(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_sandbox_is_reported_when_the_pool_makes_it() {
    let server = server().await;
    let own = Runtime::load(ComponentSource::Embedded).unwrap();
    let (seen, events) = collector();
    let _all = own.subscribe(seen).unwrap();
    let options = SessionOptions {
        env: env_for(&server),
        ..SessionOptions::default()
    };
    let pool = e2b_tools_host::WarmPool::start(&own, options, 1).unwrap();
    // Before anyone asks for a session, the pool's sandbox is told of.
    let start = std::iter::from_fn(|| events.recv_timeout(Duration::from_secs(30)).ok())
        .find(|e| e.kind == EventKind::SandboxStart)
        .expect("the pooled sandbox's start");
    assert_eq!(start.detail.as_deref(), Some("created"));
    let s = pool.session().await.unwrap();
    assert_eq!(s.sandbox_id(), start.sandbox_id, "the one handed out");
    assert_eq!(s.owned_sandboxes(), [start.sandbox_id.clone().unwrap()]);
    s.shutdown().await.unwrap();
    pool.close().await;
    assert_eq!(until_no_sandbox(&server, 10).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_and_forks_are_reported_by_the_component_not_guessed_from_tool_names() {
    let server = server().await;
    let config = SandboxConfig {
        tools: Some(vec!["all".into()]),
        ..SandboxConfig::default()
    };
    let s = session_with(&server, config, 1.0).await;
    let (seen, events) = collector();
    let _mine = s.subscribe(seen).unwrap();
    // A snapshot through call-tool, then through the typed call.
    let by_json = ok(call(&s, "create_snapshot", json!({})).await);
    let typed = s.create_snapshot(None).await.unwrap().unwrap();
    let forked = ok(call(&s, "fork_sandbox", json!({"count": 1})).await);
    let fork = forked["sandbox_ids"][0].as_str().unwrap().to_string();
    let sandbox = s.sandbox_id().unwrap();
    assert_eq!(
        s.owned_sandboxes(),
        [fork.clone(), sandbox.clone()],
        "newest first"
    );
    s.shutdown().await.unwrap();

    let got: Vec<Event> =
        std::iter::from_fn(|| events.recv_timeout(Duration::from_secs(2)).ok()).collect();
    let snapshots: Vec<(&str, &str)> = got
        .iter()
        .filter(|e| e.kind == EventKind::Snapshot)
        .map(|e| {
            (
                e.detail.as_deref().unwrap(),
                e.sandbox_id.as_deref().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        snapshots,
        [
            (by_json["snapshot_id"].as_str().unwrap(), sandbox.as_str()),
            (typed.snapshot_id.as_str(), sandbox.as_str())
        ]
    );
    let started = got
        .iter()
        .find(|e| e.kind == EventKind::SandboxStart && e.sandbox_id.as_deref() == Some(&fork))
        .expect("the fork's start");
    assert_eq!(started.detail.as_deref(), Some("forked"));
    let stopped: Vec<&str> = got
        .iter()
        .filter(|e| e.kind == EventKind::SandboxStop)
        .filter_map(|e| e.sandbox_id.as_deref())
        .collect();
    assert_eq!(stopped, [fork.as_str(), sandbox.as_str()], "the fork first");
    assert_eq!(until_no_sandbox(&server, 10).await, 0);
}
