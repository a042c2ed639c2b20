//! The code interpreter's NDJSON stream: the wire line splitter and the
//! guest's execution collector (which decodes over-long lines on the fly)
//! on any bytes, in any chunking: no panic, and the same result as when the
//! body arrives in one piece.
#![no_main]

use e2b_tools::protocol::interpreter::ExecutionCollector;
use e2b_tools_fuzz::{chunks, seeds_and_body};
use e2b_wire::interpreter::LineSplitter;
use libfuzzer_sys::fuzz_target;

const MAX_LINE: usize = 256;

fn split(parts: &[&[u8]]) -> (Vec<Vec<u8>>, Option<String>, Vec<u8>) {
    let mut splitter = LineSplitter::new(MAX_LINE);
    let mut lines = Vec::new();
    for part in parts {
        splitter.push(part);
        loop {
            match splitter.next_line() {
                Ok(Some(line)) => {
                    assert!(!line.contains(&b'\n'));
                    lines.push(line);
                }
                Ok(None) => break,
                Err(e) => return (lines, Some(e.to_string()), Vec::new()),
            }
        }
    }
    let rest = splitter.take_rest();
    (lines, None, rest)
}

fn collect(parts: &[&[u8]], rich: bool) -> String {
    let mut c = ExecutionCollector::new(100, rich);
    for part in parts {
        if let Err(e) = c.feed(part) {
            return format!("feed error {e:?} partial {:?}", c.partial_output());
        }
    }
    let ended = c.ended();
    format!("{ended} {:?}", c.finish())
}

fuzz_target!(|data: &[u8]| {
    let (seeds, body) = seeds_and_body(data);
    let parts = chunks(body, seeds);
    let whole = split(&[body]);
    let chunked = split(&parts);
    // A too-long line is refused as soon as it is seen, so only the lines
    // before it must agree.
    if whole.1.is_none() && chunked.1.is_none() {
        assert_eq!(whole, chunked);
    }
    let rich = seeds.first().is_some_and(|b| b & 1 == 1);
    assert_eq!(collect(&parts, rich), collect(&[body], rich));
});
