//! Connect envelopes: the wire decoder and the guest's process-event stream
//! on any bytes, in any chunking: no panic, bounded buffering, and the same
//! answer as when the body arrives in one piece.
#![no_main]

use e2b_tools::protocol::envd::ProcessStream;
use e2b_tools_fuzz::{chunks, seeds_and_body};
use e2b_wire::connect::EnvelopeDecoder;
use libfuzzer_sys::fuzz_target;

const MAX_PAYLOAD: usize = 4096;

fn decode(parts: &[&[u8]]) -> (Vec<(u8, Vec<u8>)>, Option<String>) {
    let mut decoder = EnvelopeDecoder::new(MAX_PAYLOAD);
    let mut out = Vec::new();
    for part in parts {
        decoder.push(part);
        loop {
            match decoder.next_envelope() {
                Ok(Some(env)) => {
                    assert!(env.payload.len() <= MAX_PAYLOAD);
                    out.push((env.flags, env.payload));
                }
                Ok(None) => break,
                Err(e) => return (out, Some(format!("{e}"))),
            }
        }
    }
    let end = decoder.finish().err().map(|e| format!("{e}"));
    (out, end)
}

fn stream(parts: &[&[u8]]) -> String {
    let mut s = ProcessStream::new(64);
    for part in parts {
        if let Err(e) = s.feed(part) {
            return format!("feed error {e:?}");
        }
    }
    format!(
        "{:?} {:?} {} {:?}",
        s.finish_body(),
        s.outcome(),
        s.is_done(),
        s.partial_output()
    )
}

fuzz_target!(|data: &[u8]| {
    let (seeds, body) = seeds_and_body(data);
    let parts = chunks(body, seeds);
    assert_eq!(decode(&parts), decode(&[body]));
    assert_eq!(stream(&parts), stream(&[body]));
});
