//! Human rendering of a tool's result object for `e2b-tools call`: what
//! the sandbox printed to stdout goes to stdout, its stderr to stderr, and
//! everything else is labelled.

use e2b_tools_host::succeeded;
use serde_json::Value;
use std::io::Write;

use super::rich_files::{rich_items, Saved};

/// Writes `result` (a tool's result object) for a person; `saved` says
/// where each of its rich results went.
pub(crate) fn render(
    tool: &str,
    result: &Value,
    saved: &[Saved],
    out: &mut impl Write,
    err: &mut impl Write,
) -> std::io::Result<()> {
    let field = |name: &str| result.get(name).and_then(Value::as_str).unwrap_or("");
    if !succeeded(result) {
        writeln!(err, "error: {}", field("error"))?;
        let partial = field("partial_output");
        if !partial.is_empty() {
            writeln!(err, "output before the failure:")?;
            write_block(err, partial)?;
        }
        return Ok(());
    }
    match tool {
        "run_code" => {
            out.write_all(field("stdout").as_bytes())?;
            err.write_all(field("stderr").as_bytes())?;
            if !field("text").is_empty() {
                write_block(out, field("text"))?;
            }
            if !field("error").is_empty() {
                write_block(err, field("error"))?;
            }
            render_rich(result, saved, out, err)?;
        }
        "run_command" => {
            out.write_all(field("stdout").as_bytes())?;
            err.write_all(field("stderr").as_bytes())?;
            match result.get("exit_code").and_then(Value::as_i64) {
                Some(0) | None => {}
                Some(code) => writeln!(err, "exit code: {code}")?,
            }
        }
        "read_file" => out.write_all(field("content").as_bytes())?,
        "write_file" => writeln!(err, "wrote {}", field("path"))?,
        "list_files" => {
            for entry in result
                .get("entries")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = entry.get("name").and_then(Value::as_str).unwrap_or("?");
                let suffix = match entry.get("type").and_then(Value::as_str) {
                    Some("dir") => "/",
                    Some("symlink") => "@",
                    _ => "",
                };
                writeln!(out, "{name}{suffix}")?;
            }
        }
        "start_background_command" => {
            let pid = result.get("pid").and_then(Value::as_u64).unwrap_or(0);
            writeln!(out, "started pid {pid}: {}", field("command"))?;
            if !field("preview_url").is_empty() {
                writeln!(out, "preview URL: {}", field("preview_url"))?;
            }
            if !field("readiness").is_empty() {
                writeln!(out, "readiness: {}", field("readiness"))?;
            }
            out.write_all(field("stdout").as_bytes())?;
            err.write_all(field("stderr").as_bytes())?;
        }
        "get_background_output" => {
            out.write_all(field("stdout").as_bytes())?;
            err.write_all(field("stderr").as_bytes())?;
            let pid = result.get("pid").and_then(Value::as_u64).unwrap_or(0);
            let since = &result["next_since"];
            writeln!(
                err,
                "pid {pid}: {}; next since: {{\"stdout\": {}, \"stderr\": {}}}",
                state(result),
                since["stdout"],
                since["stderr"]
            )?;
        }
        "stop_background_command" => {
            let pid = result.get("pid").and_then(Value::as_u64).unwrap_or(0);
            match result.get("signal").and_then(Value::as_str) {
                Some(signal) => writeln!(out, "stopped pid {pid} with {signal}")?,
                None => writeln!(out, "pid {pid} had already {}", state(result))?,
            }
        }
        _ => writeln!(out, "{}", serde_json::to_string_pretty(result)?)?,
    }
    Ok(())
}

/// `running`, or `exited` with its code.
fn state(result: &Value) -> String {
    match (
        result.get("state").and_then(Value::as_str),
        result.get("exit_code").and_then(Value::as_i64),
    ) {
        (Some("exited"), Some(code)) => format!("exited with code {code}"),
        (Some(state), _) => state.to_string(),
        (None, _) => "in an unknown state".to_string(),
    }
}

/// Rich results: the path of each one written to a file, a note for the
/// rest (they are not printed to a terminal).
fn render_rich(
    result: &Value,
    saved: &[Saved],
    out: &mut impl Write,
    err: &mut impl Write,
) -> std::io::Result<()> {
    for (i, item) in rich_items(result).enumerate() {
        let mime = item.get("mime_type").and_then(Value::as_str).unwrap_or("?");
        match saved.get(i) {
            Some(Saved::File(path)) => writeln!(out, "{mime}: {}", path.display())?,
            Some(Saved::Failed(reason)) => {
                writeln!(err, "[rich result: {mime}, not saved: {reason}]")?
            }
            Some(Saved::Skipped) | None => {
                let size = item.get("data").and_then(Value::as_str).map_or(0, str::len);
                writeln!(
                    err,
                    "[rich result: {mime}, {size} bytes; use --json to get it]"
                )?;
            }
        }
    }
    Ok(())
}

/// Writes `text` ending with exactly one newline.
fn write_block(w: &mut impl Write, text: &str) -> std::io::Result<()> {
    w.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        w.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rendered(tool: &str, result: Value) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        render(tool, &result, &[], &mut out, &mut err).unwrap();
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn run_code_output_goes_to_the_matching_stream() {
        let (out, err) = rendered(
            "run_code",
            json!({"stdout": "hi\n", "stderr": "warn\n", "text": "42", "error": "", "success": true}),
        );
        assert_eq!(out, "hi\n42\n");
        assert_eq!(err, "warn\n");
    }

    #[test]
    fn failures_print_the_error_on_stderr() {
        let (out, err) = rendered(
            "read_file",
            json!({"success": false, "error": "Failed to read file: nope", "partial_output": ""}),
        );
        assert_eq!(out, "");
        assert_eq!(err, "error: Failed to read file: nope\n");
    }

    #[test]
    fn listings_mark_directories() {
        let (out, _) = rendered(
            "list_files",
            json!({"path": ".", "entries": [{"name": "a", "type": "file"}, {"name": "d", "type": "dir"}], "success": true}),
        );
        assert_eq!(out, "a\nd/\n");
    }

    #[test]
    fn saved_rich_results_print_their_path_and_background_states_read_well() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let result = json!({"stdout": "", "stderr": "", "text": "", "error": "", "results": [
            {"mime_type": "image/png", "data": "AA==", "is_main_result": false},
            {"mime_type": "text/markdown", "data": "# x", "is_main_result": false},
        ], "success": true});
        let saved = [
            Saved::File("e2b-output/result-1.png".into()),
            Saved::Skipped,
        ];
        render("run_code", &result, &saved, &mut out, &mut err).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "image/png: e2b-output/result-1.png\n"
        );
        assert!(String::from_utf8(err)
            .unwrap()
            .contains("text/markdown, 3 bytes"));
        let (out, err) = rendered(
            "get_background_output",
            json!({"pid": 3, "state": "exited", "exit_code": 2, "stdout": "log\n", "stderr": "",
                   "next_since": {"stdout": 4, "stderr": 0}, "success": true}),
        );
        assert_eq!(out, "log\n");
        assert_eq!(
            err,
            "pid 3: exited with code 2; next since: {\"stdout\": 4, \"stderr\": 0}\n"
        );
        let (out, _) = rendered(
            "stop_background_command",
            json!({"pid": 3, "state": "exited", "exit_code": -1, "signal": "SIGTERM", "success": true}),
        );
        assert_eq!(out, "stopped pid 3 with SIGTERM\n");
    }

    #[test]
    fn nonzero_exit_codes_are_reported() {
        let (_, err) = rendered(
            "run_command",
            json!({"command": "false", "stdout": "", "stderr": "", "exit_code": 1, "success": true}),
        );
        assert_eq!(err, "exit code: 1\n");
    }
}
