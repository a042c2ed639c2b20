//! A tool's result object as MCP content.

use e2b_tools_host::succeeded;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// Turns a tool's result object into MCP content: the object as
/// structured content and as JSON text, images as image blocks.
pub fn tool_result(mut value: Value) -> CallToolResult {
    let success = succeeded(&value);
    let images = extract_images(&mut value);
    let mut content = vec![ContentBlock::text(value.to_string())];
    content.extend(
        images
            .into_iter()
            .map(|(data, mime)| ContentBlock::image(data, mime)),
    );
    let mut result = if success {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    // A result object always; anything else (a host error's text) is not
    // structured.
    result.structured_content = value.is_object().then_some(value);
    result
}

/// Moves base64 image data out of a result's rich results (`rich` or
/// `results`: objects with `mime_type` and `data`), leaving a short note in
/// their place so the text block stays readable.
fn extract_images(value: &mut Value) -> Vec<(String, String)> {
    let mut images = Vec::new();
    for key in ["rich", "results"] {
        let Some(items) = value.get_mut(key).and_then(Value::as_array_mut) else {
            continue;
        };
        for item in items {
            let Some(object) = item.as_object_mut() else {
                continue;
            };
            let mime = object
                .get("mime_type")
                .or_else(|| object.get("mimeType"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let Some(mime) = mime.filter(|m| m.starts_with("image/") && m != "image/svg+xml")
            else {
                continue;
            };
            if let Some(Value::String(data)) = object.remove("data") {
                object.insert(
                    "data".into(),
                    Value::String(format!("<{mime} image returned as MCP image content>")),
                );
                images.push((data, mime));
            }
        }
    }
    images
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn failures_are_error_results() {
        let result = tool_result(json!({"success": false, "error": "x", "partial_output": ""}));
        assert_eq!(result.is_error, Some(true));
        assert_eq!(result.content.len(), 1);
        assert_eq!(result.structured_content.unwrap()["error"], "x");
    }

    #[test]
    fn png_rich_results_become_image_blocks() {
        let result = tool_result(json!({
            "stdout": "", "rich": [
                {"mime_type": "image/png", "data": "iVBORw0KGgo=", "is_main_result": true},
                {"mime_type": "text/html", "data": "<b>x</b>", "is_main_result": false}
            ],
            "success": true
        }));
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.content.len(), 2);
        match &result.content[1] {
            ContentBlock::Image(image) => {
                assert_eq!(image.data, "iVBORw0KGgo=");
                assert_eq!(image.mime_type, "image/png");
            }
            other => panic!("expected an image, got {other:?}"),
        }
        match &result.content[0] {
            ContentBlock::Text(text) => {
                assert!(!text.text.contains("iVBORw0KGgo="));
                assert!(text.text.contains("<b>x</b>"));
            }
            other => panic!("expected text, got {other:?}"),
        }
    }
}
