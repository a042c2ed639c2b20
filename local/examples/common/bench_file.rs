//! What the local server's benchmarks share: their arguments (`RUNS` and
//! `OUT`), percentiles, and writing one generated `## ` section into local/BENCHMARKS.md,
//! replacing that section's previous run and keeping the rest of the file
//! (the isolation table at its head, the other generated sections, the
//! hand-written notes).

/// `[RUNS [OUT]]`: rounds per row (`default_runs` unless given) and the
/// file to write (local/BENCHMARKS.md unless given).
pub fn runs_and_out(default_runs: usize) -> Result<(usize, String), std::num::ParseIntError> {
    let runs = std::env::args()
        .nth(1)
        .map(|r| r.parse())
        .transpose()?
        .unwrap_or(default_runs);
    let out = std::env::args()
        .nth(2)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/BENCHMARKS.md").to_string());
    Ok((runs, out))
}

/// Puts `md` (which starts with `title`, a `## ` line) into the file `out`:
/// in place of the section of that title, else before the first `## `
/// section, else at the end.
pub fn write_section(out: &str, title: &str, md: &str) -> std::io::Result<()> {
    let previous = std::fs::read_to_string(out).unwrap_or_default();
    let (head, tail) = match previous.find(&format!("\n{title}\n")) {
        Some(at) => {
            let rest = &previous[at + 1 + title.len()..];
            let end = rest.find("\n## ").map(|e| &rest[e + 1..]).unwrap_or("");
            (&previous[..=at], end.to_string())
        }
        None => match previous.find("\n## ") {
            Some(at) => (&previous[..=at], previous[at + 1..].to_string()),
            None => (previous.as_str(), String::new()),
        },
    };
    std::fs::write(out, format!("{head}{md}{tail}"))
}

/// The `p` quantile of `v` (nearest rank; `v` gets sorted).
pub fn percentile<T: Ord + Copy + Default>(v: &mut [T], p: f64) -> T {
    v.sort();
    v.get(((v.len() as f64 - 1.0) * p).round() as usize)
        .copied()
        .unwrap_or_default()
}
