//! Streaming truncation: any chunking of any bytes gives exactly what
//! truncating the whole (lossily decoded) text gives, the kept part fits
//! the limit, and no UTF-8 character is split.
#![no_main]

use e2b_tools::output::truncate::{truncate_text, TruncatingSink};
use e2b_tools_fuzz::{chunks, seeds_and_body};
use libfuzzer_sys::fuzz_target;

const MARK: &str = "…[truncated ";

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let limit = usize::from(data[0]) % 80;
    let (seeds, body) = seeds_and_body(&data[1..]);
    let whole = String::from_utf8_lossy(body);
    let expected = truncate_text(&whole, limit);

    let mut sink = TruncatingSink::new(limit);
    for part in chunks(body, seeds) {
        sink.push_bytes(part);
        // A snapshot mid-stream is always well-formed text too.
        let _ = sink.snapshot();
    }
    let got = sink.finish();
    assert_eq!(got, expected, "limit {limit}");

    if whole.len() <= limit {
        assert_eq!(got, whole);
    } else {
        let (kept, tail) = got.rsplit_once(MARK).expect("a truncation mark");
        assert!(kept.len() <= limit);
        assert!(whole.starts_with(kept));
        // The longest whole-character prefix: the next character did not fit.
        let next = whole[kept.len()..]
            .chars()
            .next()
            .expect("something was cut");
        assert!(kept.len() + next.len_utf8() > limit);
        assert!(tail.ends_with(" bytes]"));
    }
});
