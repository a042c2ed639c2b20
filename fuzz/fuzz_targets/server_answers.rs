//! Whatever a server or proxy answers (any status, any body) becomes a
//! typed result or failure, never a panic; and redaction leaves no secret
//! behind in any text.
#![no_main]

use e2b_tools::protocol::api::{
    parse_kill, parse_pause, parse_pauses_on_timeout, parse_sandbox, parse_set_timeout,
    parse_time_left,
};
use e2b_tools::tools::background::Offsets;
use e2b_tools::tools::background::script::{parse_output, parse_stop};
use e2b_tools::protocol::envd::parse_list_dir;
use e2b_tools::errors::{
    body_message, from_api_status, from_connect_http, from_envd_http, from_interpreter_http,
};
use e2b_tools::output::redact::{Secrets, StreamRedactor};
use e2b_tools::protocol::request::split_url;
use e2b_tools::session::retry::{parse_retry_after, parse_should_retry};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let status = u16::from_be_bytes([data[0], data[1]]) % 700;
    let body = &data[2..];
    let _ = parse_sandbox(status, body, None);
    let _ = parse_sandbox(status, body, Some("sbx1"));
    let _ = parse_set_timeout(status, body, "sbx1");
    let _ = parse_kill(status, body);
    let _ = parse_pause(status, body, "sbx1");
    let _ = parse_pauses_on_timeout(body);
    let _ = parse_time_left(status, body, u64::from(status) << 40);
    let _ = parse_list_dir(status, body);
    for failure in [
        from_api_status(status, body),
        from_connect_http(status, body),
        from_envd_http(status, body),
        from_interpreter_http(status, body),
    ] {
        assert!(!failure.message.is_empty(), "{failure:?}");
    }
    let _ = body_message(body);

    let text = String::from_utf8_lossy(body);
    let _ = split_url(&text);
    // A sandbox's answer to the background process queries.
    let since = Offsets {
        stdout: u64::from(data[0]),
        stderr: u64::from(data[1]),
    };
    if let Ok(out) = parse_output(7, &text, since, usize::from(status), &Secrets::default()) {
        assert!(out.next_since.stdout >= since.stdout && out.next_since.stderr >= since.stderr);
    }
    let _ = parse_stop(7, &text);
    let _ = parse_retry_after(&text);
    let _ = parse_should_retry(&text);
    // Secrets are taken from the text itself, so they do occur in it.
    let a: String = text.chars().take(8).collect();
    let b: String = text.chars().skip(3).take(12).collect();
    let secrets: Vec<&str> = [a.as_str(), b.as_str()]
        .into_iter()
        .filter(|s| s.len() >= 6 && !s.contains(['<', '>']))
        .collect();
    let secrets = Secrets::new(secrets);
    let redacted = secrets.redact(&text);
    // On a stream split anywhere, the same text comes out.
    let cut = (usize::from(data[0]) * text.len() / 256..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    let mut stream = StreamRedactor::new(secrets.clone());
    let mut streamed = stream.push(&text[..cut]);
    streamed.push_str(&stream.push(&text[cut..]));
    streamed.push_str(&stream.finish());
    assert_eq!(streamed, redacted);
    let secrets = secrets.as_slice();
    // The placeholder itself may contain a "secret" made of letters only;
    // what must not survive is a secret in the text around the placeholders.
    for part in redacted.split("<redacted>") {
        for secret in secrets {
            assert!(
                !part.contains(secret.as_str()),
                "{secret:?} left in {redacted:?}"
            );
        }
    }
});
