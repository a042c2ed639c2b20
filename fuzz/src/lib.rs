//! Shared by the fuzz targets: turning one fuzz input into a body and a way
//! to cut it into chunks, since every parser here must give the same answer
//! however the network splits its input.

/// Splits `data` into (chunk-size seeds, body): the first byte says how
/// many seed bytes follow (0–7), the rest is the body.
pub fn seeds_and_body(data: &[u8]) -> (&[u8], &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return (&[], &[]);
    };
    let n = usize::from(first % 8).min(rest.len());
    rest.split_at(n)
}

/// Cuts `body` into chunks whose sizes cycle through `seeds` (each 1–64
/// bytes; one whole chunk when there are no seeds).
pub fn chunks<'a>(body: &'a [u8], seeds: &[u8]) -> Vec<&'a [u8]> {
    if seeds.is_empty() {
        return vec![body];
    }
    let mut out = Vec::new();
    let mut rest = body;
    let mut i = 0;
    while !rest.is_empty() {
        let size = (usize::from(seeds[i % seeds.len()]) % 64 + 1).min(rest.len());
        let (chunk, tail) = rest.split_at(size);
        out.push(chunk);
        rest = tail;
        i += 1;
    }
    out
}
