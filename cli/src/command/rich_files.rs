//! Rich results people would rather look at than read (images, SVG, HTML,
//! PDF) written to files for `call` and `batch`, so a chart from `run_code`
//! opens in a viewer instead of scrolling past as base64.
//!
//! The sandbox decides the data, never the names: files are
//! `<DIR>/result-<n>.<ext>`, the extension from a fixed table of MIME types.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;

/// The directory used when `--output-dir` is not given: the first of
/// `e2b-output`, `e2b-output-2`, … that does not exist yet, under the
/// current directory, made only once there is something to write.
const DEFAULT_DIR: &str = "e2b-output";

/// The file extension of a MIME type worth a file, and whether its data is
/// base64 (else text).
fn file_kind(mime: &str) -> Option<(&'static str, bool)> {
    Some(match mime {
        "image/png" => ("png", true),
        "image/jpeg" => ("jpg", true),
        "image/gif" => ("gif", true),
        "image/webp" => ("webp", true),
        "application/pdf" => ("pdf", true),
        "image/svg+xml" => ("svg", false),
        "text/html" => ("html", false),
        _ => return None,
    })
}

/// Writes rich results to files, numbering them across calls.
#[derive(Debug)]
pub(crate) struct RichFiles {
    /// `--output-dir`, if given.
    requested: Option<PathBuf>,
    /// The directory in use, once made.
    dir: Option<PathBuf>,
    written: usize,
}

/// What became of one rich result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Saved {
    /// Written to this file.
    File(PathBuf),
    /// Not a kind that goes to a file.
    Skipped,
    /// It should have, but could not be written.
    Failed(String),
}

impl RichFiles {
    /// Files under `requested`, or a fresh directory here.
    pub(crate) fn new(requested: Option<PathBuf>) -> Self {
        Self {
            requested,
            dir: None,
            written: 0,
        }
    }

    /// Saves each file-worthy rich result of `result` (its `results`
    /// list), in order.
    pub(crate) fn save(&mut self, result: &Value) -> Vec<Saved> {
        rich_items(result)
            .map(|item| {
                let mime = item.get("mime_type").and_then(Value::as_str).unwrap_or("");
                let data = item.get("data").and_then(Value::as_str).unwrap_or("");
                match file_kind(mime) {
                    None => Saved::Skipped,
                    Some((ext, is_base64)) => match self.write(ext, is_base64, data) {
                        Ok(path) => Saved::File(path),
                        Err(reason) => Saved::Failed(reason),
                    },
                }
            })
            .collect()
    }

    /// Adds `"file": PATH` to each saved item of `result` (for `batch`'s
    /// JSON lines; the data stays).
    pub(crate) fn annotate(result: &mut Value, saved: &[Saved]) {
        let Some(items) = result.get_mut("results").and_then(Value::as_array_mut) else {
            return;
        };
        for (item, saved) in items.iter_mut().zip(saved) {
            if let (Saved::File(path), Some(map)) = (saved, item.as_object_mut()) {
                map.insert("file".into(), Value::String(path.display().to_string()));
            }
        }
    }

    fn write(&mut self, ext: &str, is_base64: bool, data: &str) -> Result<PathBuf, String> {
        let bytes = if is_base64 {
            let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map_err(|err| format!("its data is not base64 ({err})"))?
        } else {
            data.as_bytes().to_vec()
        };
        let dir = self.dir()?;
        self.written += 1;
        let path = dir.join(format!("result-{}.{ext}", self.written));
        std::fs::write(&path, bytes).map_err(|err| format!("{}: {err}", path.display()))?;
        Ok(path)
    }

    fn dir(&mut self) -> Result<PathBuf, String> {
        if let Some(dir) = &self.dir {
            return Ok(dir.clone());
        }
        let dir = match &self.requested {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
                dir.clone()
            }
            None => fresh_dir(Path::new("."))?,
        };
        self.dir = Some(dir.clone());
        Ok(dir)
    }
}

/// The rich results of a result object.
pub(crate) fn rich_items(result: &Value) -> impl Iterator<Item = &Value> {
    result
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Makes the first free `e2b-output[-N]` under `parent`.
fn fresh_dir(parent: &Path) -> Result<PathBuf, String> {
    for n in 1..10_000 {
        let name = match n {
            1 => DEFAULT_DIR.to_string(),
            n => format!("{DEFAULT_DIR}-{n}"),
        };
        let dir = parent.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(format!("{}: {err}", dir.display())),
        }
    }
    Err("no free e2b-output directory name here".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn images_svg_and_html_become_files_named_by_us_and_text_does_not() {
        let parent = std::env::temp_dir().join(format!("rich-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&parent);
        std::fs::create_dir_all(parent.join(DEFAULT_DIR)).unwrap();
        let dir = fresh_dir(&parent).unwrap();
        assert_eq!(dir, parent.join("e2b-output-2"), "an existing one is kept");
        let mut files = RichFiles::new(Some(dir.clone()));
        let mut result = json!({"results": [
            {"mime_type": "image/png", "data": "iVBORw0K\nGgo=", "is_main_result": false},
            {"mime_type": "text/markdown", "data": "# hi", "is_main_result": false},
            {"mime_type": "image/svg+xml", "data": "<svg/>", "is_main_result": true},
            {"mime_type": "image/jpeg", "data": "not base64!", "is_main_result": false},
        ]});
        let saved = files.save(&result);
        assert_eq!(saved[0], Saved::File(dir.join("result-1.png")));
        assert_eq!(saved[1], Saved::Skipped);
        assert_eq!(saved[2], Saved::File(dir.join("result-2.svg")));
        assert!(matches!(&saved[3], Saved::Failed(r) if r.contains("not base64")));
        assert_eq!(
            std::fs::read(dir.join("result-1.png")).unwrap(),
            b"\x89PNG\r\n\x1a\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("result-2.svg")).unwrap(),
            "<svg/>"
        );
        RichFiles::annotate(&mut result, &saved);
        assert_eq!(
            result["results"][2]["file"],
            dir.join("result-2.svg").display().to_string()
        );
        assert!(result["results"][1].get("file").is_none());
        std::fs::remove_dir_all(&parent).unwrap();
    }
}
