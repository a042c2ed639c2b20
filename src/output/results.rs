//! e2b-adk's result dicts: an object that keeps its keys in order (each
//! tool puts its fields, `success: true` last), and the failure dict
//! `{"success": false, "error", "partial_output", "path"?, "command"?}`.

use serde_json::Value;

use crate::errors::ToolError;

/// A JSON object that keeps its keys in insertion order (serde_json's map
/// sorts them unless a crate-wide feature is switched on).
#[derive(Debug, Default)]
pub struct OrderedObject(Vec<(&'static str, Value)>);

impl OrderedObject {
    /// Appends a key.
    pub fn put(mut self, key: &'static str, value: impl Into<Value>) -> Self {
        self.0.push((key, value.into()));
        self
    }

    /// The compact JSON text.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{");
        for (i, (key, value)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&Value::from(*key).to_string());
            out.push(':');
            out.push_str(&value.to_string());
        }
        out.push('}');
        out
    }
}

/// e2b-adk's failure dict.
pub fn failure_json(err: &ToolError) -> String {
    failure_object(err).to_json()
}

/// [`failure_json`]'s object, for callers that add keys.
pub fn failure_object(err: &ToolError) -> OrderedObject {
    let mut obj = OrderedObject::default()
        .put("success", false)
        .put("error", err.message.as_str())
        .put("partial_output", err.partial_output.as_str());
    if let Some(path) = &err.path {
        obj = obj.put("path", path.as_str());
    }
    if let Some(command) = &err.command {
        obj = obj.put("command", command.as_str());
    }
    obj
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_dicts_match_appendix_b() {
        let err = ToolError::invalid("Missing or invalid required argument: code");
        assert_eq!(
            failure_json(&err),
            r#"{"success":false,"error":"Missing or invalid required argument: code","partial_output":""}"#
        );
        let err = ToolError::invalid("Failed to read file: path '/tmp/missing.txt' does not exist")
            .with_path("/tmp/missing.txt");
        assert_eq!(
            failure_json(&err),
            r#"{"success":false,"error":"Failed to read file: path '/tmp/missing.txt' does not exist","partial_output":"","path":"/tmp/missing.txt"}"#
        );
        let err = ToolError::invalid("x")
            .with_command("sleep 10")
            .with_partial_output("tick\n".into());
        assert_eq!(
            failure_json(&err),
            r#"{"success":false,"error":"x","partial_output":"tick\n","command":"sleep 10"}"#
        );
    }
}
