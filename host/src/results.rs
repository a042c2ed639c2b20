//! Result objects, the JSON a tool call answers with (e2b-adk's dicts):
//! the one place the host builds a failure of its own, and reads success.

use serde_json::{json, Value};

/// A result object in e2b-adk's failure shape, for a failure the host
/// reports itself (arguments too large, a session that trapped, a
/// malformed batch line): `success: false`, the `error` text and an
/// empty `partial_output`, as the component's own failures have.
pub fn failure_result(error: impl std::fmt::Display) -> Value {
    json!({"success": false, "error": error.to_string(), "partial_output": ""})
}

/// Whether a result object says `success: true`.
pub fn succeeded(result: &Value) -> bool {
    result.get("success").and_then(Value::as_bool) == Some(true)
}

/// What the host reads of a result it passes on as text: only `success`,
/// without building the rest.
#[derive(serde::Deserialize)]
pub(crate) struct Outcome {
    #[serde(default)]
    success: Option<bool>,
}

impl Outcome {
    /// Whether `text` is a result object that says `success: true`.
    pub(crate) fn succeeded(text: &str) -> bool {
        serde_json::from_str::<Outcome>(text).is_ok_and(|outcome| outcome.success == Some(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_have_the_component_s_shape_and_success_is_read_either_way() {
        let failure = failure_result("no");
        assert_eq!(
            failure,
            json!({"success": false, "error": "no", "partial_output": ""})
        );
        assert!(!succeeded(&failure));
        assert!(!Outcome::succeeded(&failure.to_string()));
        let ok = json!({"stdout": "", "success": true});
        assert!(succeeded(&ok));
        assert!(Outcome::succeeded(&ok.to_string()));
        assert!(!Outcome::succeeded("not json"));
        assert!(!Outcome::succeeded("[1]"));
    }
}
