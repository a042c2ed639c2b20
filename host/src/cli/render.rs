//! Human rendering of a tool's result object for `e2b-tools call`: what
//! the sandbox printed to stdout goes to stdout, its stderr to stderr, and
//! everything else is labelled.

use serde_json::Value;
use std::io::Write;

/// Writes `result` (a tool's result object) for a person.
pub(crate) fn render(
    tool: &str,
    result: &Value,
    out: &mut impl Write,
    err: &mut impl Write,
) -> std::io::Result<()> {
    let field = |name: &str| result.get(name).and_then(Value::as_str).unwrap_or("");
    if result.get("success").and_then(Value::as_bool) != Some(true) {
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
            render_rich(result, err)?;
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
        _ => writeln!(out, "{}", serde_json::to_string_pretty(result)?)?,
    }
    Ok(())
}

/// Notes rich results (images are not printed to a terminal).
fn render_rich(result: &Value, err: &mut impl Write) -> std::io::Result<()> {
    for key in ["rich", "results"] {
        for item in result
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mime = item.get("mime_type").and_then(Value::as_str).unwrap_or("?");
            let size = item.get("data").and_then(Value::as_str).map_or(0, str::len);
            writeln!(
                err,
                "[rich result: {mime}, {size} bytes; use --json to get it]"
            )?;
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
        render(tool, &result, &mut out, &mut err).unwrap();
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
    fn nonzero_exit_codes_are_reported() {
        let (_, err) = rendered(
            "run_command",
            json!({"command": "false", "stdout": "", "stderr": "", "exit_code": 1, "success": true}),
        );
        assert_eq!(err, "exit code: 1\n");
    }
}
