//! JSON-RPC batches on streamable HTTP, for sessions of MCP revision
//! 2025-03-26, the one revision whose transport has them (2025-06-18
//! removed them). rmcp takes one message per POST, so a batch is split into
//! one POST per message, sent to rmcp in order, and the answers gathered
//! into one JSON array; a batch of notifications and responses alone is
//! answered 202, as a single one is. A session of a later revision (its
//! `MCP-Protocol-Version` header names it; without the header the
//! specification says to assume 2025-03-26) is refused with a JSON-RPC
//! error that says why.

use std::future::Future;

use axum::body::Bytes;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// The revision whose sessions may send batches.
pub(super) const BATCH_REVISION: &str = "2025-03-26";

/// What rmcp answered to one message of a batch.
pub(super) struct Answer {
    pub(super) status: StatusCode,
    /// Its `Content-Type`.
    pub(super) content_type: String,
    pub(super) body: Bytes,
}

/// Whether `body` is a JSON-RPC batch (a JSON array).
pub(super) fn is_batch(body: &[u8]) -> bool {
    body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

/// Answers the batch `body` of a session whose revision is `revision` (its
/// `MCP-Protocol-Version` header, if it sent one), sending each message
/// through `send`, one after the other.
pub(super) async fn answer<F, Fut>(body: &[u8], revision: Option<&str>, send: F) -> Response
where
    F: Fn(Bytes) -> Fut,
    Fut: Future<Output = Answer>,
{
    if let Some(revision) = revision.filter(|r| *r != BATCH_REVISION) {
        return refusal(&format!(
            "JSON-RPC batches are part of MCP {BATCH_REVISION} only, and this request speaks \
             {revision}: send one message per request"
        ));
    }
    let messages: Vec<Value> = match serde_json::from_slice(body) {
        Ok(Value::Array(messages)) if !messages.is_empty() => messages,
        Ok(_) => return refusal("an empty batch"),
        Err(e) => return refusal(&format!("the batch is not JSON: {e}")),
    };
    let mut answers = Vec::new();
    for message in messages {
        if !message.is_object() {
            answers.push(error(
                &Value::Null,
                -32600,
                "Invalid Request: not an object",
            ));
            continue;
        }
        if message.get("method").and_then(Value::as_str) == Some("initialize") {
            answers.push(error(
                &message["id"],
                -32600,
                "initialize may not be part of a batch",
            ));
            continue;
        }
        let answer = send(Bytes::from(message.to_string())).await;
        answers.extend(replies(&message, &answer));
    }
    if answers.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Value::Array(answers).to_string(),
    )
        .into_response()
}

/// The JSON-RPC responses in rmcp's `answer` to `message`: none for a
/// notification (202), the body's for JSON, the responses among the events
/// of a stream, or an error naming the HTTP status of a refusal.
fn replies(message: &Value, answer: &Answer) -> Vec<Value> {
    if answer.status == StatusCode::ACCEPTED {
        return Vec::new();
    }
    if !answer.status.is_success() {
        let text = String::from_utf8_lossy(&answer.body);
        return vec![error(
            &message["id"],
            -32603,
            &format!("refused ({}): {}", answer.status, text.trim()),
        )];
    }
    let values: Vec<Value> = if answer.content_type.starts_with("text/event-stream") {
        event_data(&String::from_utf8_lossy(&answer.body))
    } else {
        serde_json::from_slice(&answer.body).into_iter().collect()
    };
    values
        .into_iter()
        .filter(|v| {
            v.get("id").is_some() && (v.get("result").is_some() || v.get("error").is_some())
        })
        .collect()
}

/// The JSON of each event's `data:` lines in a server-sent event stream.
fn event_data(stream: &str) -> Vec<Value> {
    stream
        .replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            serde_json::from_str(&data.join("\n")).ok()
        })
        .collect()
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A batch refused whole: 400 with one JSON-RPC error.
fn refusal(message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        error(&Value::Null, -32600, message).to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_answer(value: Value) -> Answer {
        Answer {
            status: StatusCode::OK,
            content_type: "application/json".into(),
            body: Bytes::from(value.to_string()),
        }
    }

    async fn body_of(response: Response) -> (StatusCode, Value) {
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    #[test]
    fn a_batch_is_an_array() {
        assert!(is_batch(b"  \n[{}]"));
        assert!(!is_batch(b"{\"jsonrpc\":\"2.0\"}"));
        assert!(!is_batch(b""));
    }

    #[test]
    fn responses_are_read_from_json_and_from_event_streams() {
        let message = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
        let stream = Answer {
            status: StatusCode::OK,
            content_type: "text/event-stream".into(),
            body: Bytes::from(
                "id: 0\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n\
                 data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}\n\n",
            ),
        };
        assert_eq!(
            replies(&message, &stream),
            [json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}})]
        );
        let refused = Answer {
            status: StatusCode::NOT_FOUND,
            content_type: "text/plain".into(),
            body: Bytes::from("Not Found: Session not found"),
        };
        let e = &replies(&message, &refused)[0];
        assert_eq!(e["id"], 3);
        assert!(
            e["error"]["message"].as_str().unwrap().contains("404"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn each_message_is_sent_in_order_and_the_answers_gathered() {
        let sent = std::sync::Mutex::new(Vec::new());
        let send = |body: Bytes| {
            let message: Value = serde_json::from_slice(&body).unwrap();
            sent.lock().unwrap().push(message["method"].clone());
            async move {
                match message.get("id") {
                    Some(id) => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
                    None => Answer {
                        status: StatusCode::ACCEPTED,
                        content_type: String::new(),
                        body: Bytes::new(),
                    },
                }
            }
        };
        let batch = json!([
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/cancelled"},
            7,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ]);
        let (status, body) = body_of(answer(batch.to_string().as_bytes(), None, send).await).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body[0]["id"], 1);
        assert_eq!(body[1]["error"]["code"], -32600);
        assert_eq!(body[2]["id"], 2);
        assert_eq!(body.as_array().unwrap().len(), 3);
        assert_eq!(
            *sent.lock().unwrap(),
            [
                json!("ping"),
                json!("notifications/cancelled"),
                json!("tools/list")
            ]
        );
        // Notifications alone: 202. A later revision: refused, nothing sent.
        let only = json!([{"jsonrpc": "2.0", "method": "notifications/cancelled"}]);
        let response = answer(only.to_string().as_bytes(), Some(BATCH_REVISION), send).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        let before = sent.lock().unwrap().len();
        let (status, body) =
            body_of(answer(batch.to_string().as_bytes(), Some("2025-11-25"), send).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2025-11-25"));
        assert_eq!(sent.lock().unwrap().len(), before);
    }
}
