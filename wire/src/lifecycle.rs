//! The lifecycle events the guest reports as they happen, part of the
//! host-guest contract: a sandbox became the instance's or stopped being
//! it, a tool call began or ended, a snapshot was taken. The embedding
//! world reports them through its WIT `events` import (the same fields);
//! the stateless world, whose hosts (wassette among them) cannot implement
//! an import of ours, writes each as one line of its stdout,
//! `{"event": {...}}`, when the host sets
//! [`EVENTS`](crate::host_guest::env::EVENTS).

/// How a sandbox came to the instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Created by it.
    Created,
    /// Attached to by id.
    Attached,
    /// Forked from its sandbox.
    Forked,
}

/// Why a sandbox left the instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Killed.
    Killed,
    /// Left to pause, or handed on: it lives on.
    Released,
    /// Found gone (expired, killed elsewhere).
    Gone,
}

/// One lifecycle event.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Report {
    /// A sandbox became the instance's.
    SandboxStarted {
        /// Its id.
        sandbox_id: String,
        /// Its template or snapshot; empty when attached.
        template: String,
        /// How it came.
        origin: Origin,
        /// Whether the host should kill it when done (created, or forked
        /// without `keep`).
        owned: bool,
        /// The sandbox it was forked from.
        source: Option<String>,
    },
    /// A sandbox stopped being the instance's.
    SandboxStopped {
        /// Its id.
        sandbox_id: String,
        /// Why.
        reason: StopReason,
    },
    /// A tool call began its work.
    ExecStarted {
        /// The tool's name.
        tool: String,
        /// Its sandbox, once it has one.
        sandbox_id: Option<String>,
    },
    /// A tool call ended.
    ExecEnded {
        /// The tool's name.
        tool: String,
        /// Its sandbox.
        sandbox_id: Option<String>,
        /// How long it took.
        duration_ms: u64,
        /// Why it failed, as the WIT's `error-kind` names it
        /// (`sandbox-expired`, …); none when it succeeded.
        error_kind: Option<String>,
    },
    /// A snapshot was taken.
    SnapshotCreated {
        /// The sandbox it was taken of.
        sandbox_id: String,
        /// The snapshot.
        snapshot_id: String,
    },
}

impl Report {
    /// The event as one line of the stateless world's stdout,
    /// `{"event": {...}}` (no newline).
    pub fn json_line(&self) -> String {
        serde_json::json!({ "event": self }).to_string()
    }

    /// The event of one such line, if it is one.
    pub fn from_json_line(line: &[u8]) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct Line {
            event: Report,
        }
        serde_json::from_slice::<Line>(line).ok().map(|l| l.event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_goes_through_a_json_line_and_back() {
        let report = Report::ExecEnded {
            tool: "run_code".into(),
            sandbox_id: Some("sbx".into()),
            duration_ms: 12,
            error_kind: Some("sandbox-expired".into()),
        };
        let line = report.json_line();
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"event": {"kind": "exec_ended", "tool": "run_code", "sandbox_id": "sbx",
                "duration_ms": 12, "error_kind": "sandbox-expired"}})
        );
        assert_eq!(Report::from_json_line(line.as_bytes()), Some(report));
        assert_eq!(Report::from_json_line(br#"{"progress": {}}"#), None);
        let started = Report::SandboxStarted {
            sandbox_id: "a".into(),
            template: "t".into(),
            origin: Origin::Forked,
            owned: true,
            source: Some("b".into()),
        };
        assert!(started.json_line().contains(r#""origin":"forked""#));
    }
}
