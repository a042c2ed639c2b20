//! NDJSON answer lines of `/execute`, written like the real server
//! (Python's `json.dumps`: `", "` and `": "` separators).

use bytes::Bytes;
use e2b_wire::interpreter::{ExecutionResult, OutputLine};
use serde::Serialize;
use serde_json::{Map, Value};

/// `serde_json` formatter using Python's default separators.
struct PythonStyle;

impl serde_json::ser::Formatter for PythonStyle {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        // The same `, ` between members as between array values.
        self.begin_array_value(writer, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// One `\n`-terminated line.
pub(crate) fn encode(line: &OutputLine) -> Bytes {
    let mut out = Vec::with_capacity(64);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonStyle);
    // Serialising these plain data types cannot fail.
    if line.serialize(&mut ser).is_err() {
        out = br#"{"type": "keepalive"}"#.to_vec();
    }
    out.push(b'\n');
    Bytes::from(out)
}

/// ISO-8601 time for `stdout`/`stderr` lines.
pub(crate) fn timestamp() -> String {
    humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string()
}

/// A `result` line from a kernel's MIME bundle, mapped the way the real
/// server does (one pair of surrounding single quotes stripped from
/// `text/plain`; unknown types kept in `extra`).
pub(crate) fn result_from_bundle(
    mut data: Map<String, Value>,
    is_main_result: bool,
) -> ExecutionResult {
    let mut take_text = |mime: &str| match data.remove(mime) {
        Some(Value::String(s)) => Some(s),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    };
    // As E2B's server: a quoted string's quotes go (Python's repr, Deno's
    // and IRkernel's inspection).
    let text = take_text("text/plain").map(|t| {
        let unquoted = ['\'', '"'].iter().find_map(|q| {
            t.strip_prefix(*q)
                .and_then(|inner| inner.strip_suffix(*q))
                .filter(|_| t.len() >= 2)
        });
        unquoted.map_or(t.clone(), str::to_string)
    });
    let html = take_text("text/html");
    let markdown = take_text("text/markdown");
    let svg = take_text("image/svg+xml");
    let png = take_text("image/png");
    let jpeg = take_text("image/jpeg");
    let pdf = take_text("application/pdf");
    let latex = take_text("text/latex");
    let javascript = take_text("application/javascript");
    let json = data.remove("application/json").filter(|v| !v.is_null());
    let frame = data.remove("e2b/data").filter(|v| !v.is_null());
    let chart = data.remove("e2b/chart").filter(|v| !v.is_null());
    ExecutionResult {
        text,
        html,
        markdown,
        svg,
        png,
        jpeg,
        pdf,
        latex,
        json,
        javascript,
        data: frame,
        chart,
        extra: Some(Value::Object(data)),
        is_main_result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_look_like_python_json_dumps() {
        let line = OutputLine::Stdout {
            text: "a\n".into(),
            timestamp: Some("t".into()),
        };
        assert_eq!(
            encode(&line),
            Bytes::from_static(
                b"{\"type\": \"stdout\", \"text\": \"a\\n\", \"timestamp\": \"t\"}\n"
            )
        );
    }

    #[test]
    fn bundle_maps_to_result_fields() {
        let data = serde_json::json!({"text/plain": "'abc'", "text/html": "<b>", "x/y": 1});
        let Value::Object(map) = data else {
            unreachable!()
        };
        let r = result_from_bundle(map, true);
        assert_eq!(r.text.as_deref(), Some("abc"));
        assert_eq!(r.html.as_deref(), Some("<b>"));
        assert_eq!(r.extra, Some(serde_json::json!({"x/y": 1})));
        assert!(r.is_main_result);
        assert!(timestamp().ends_with('Z'));
    }
}
