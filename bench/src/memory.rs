//! Idle sessions per process, and this process's memory.

use super::*;

/// (5): opens `count` idle sessions (no sandbox) and keeps them all.
pub(crate) async fn idle_sessions(
    runtime: &Runtime,
    env: &BTreeMap<String, String>,
    count: usize,
) -> Result<SessionsRow, Failure> {
    let before = memory_kib().0;
    let private_before = private_kib();
    let pss_before = pss_kib();
    let started = Instant::now();
    let mut sessions = Vec::with_capacity(count);
    let mut failure = None;
    for _ in 0..count {
        match open_session(runtime, env).await {
            Ok(session) => sessions.push(session),
            // Reported in the table, with how many opened before it.
            Err(err) => {
                failure = Some(err.to_string());
                break;
            }
        }
    }
    let opened = sessions.len();
    let elapsed = started.elapsed();
    let after = memory_kib().0;
    let private_after = private_kib();
    let pss_after = pss_kib();
    let linear = match sessions.first() {
        Some(session) => session.linear_memory_bytes().await,
        None => 0,
    };
    drop(sessions);
    Ok(SessionsRow {
        count,
        opened,
        failure,
        per_instance: elapsed / opened.max(1) as u32,
        rss_per_session_kib: after.saturating_sub(before) as f64 / opened.max(1) as f64,
        private_per_session_kib: private_after.saturating_sub(private_before) as f64
            / opened.max(1) as f64,
        pss_per_session_kib: pss_after.saturating_sub(pss_before) as f64 / opened.max(1) as f64,
        linear_memory_bytes: linear,
    })
}

/// VmRSS and VmHWM of this process, in KiB.
pub(crate) fn memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Private (unshared) resident memory of this process, in KiB: RSS less
/// the page-cache pages it maps, such as the compiled component's memory
/// image, which every instance maps and RSS counts once per mapping.
pub(crate) fn private_kib() -> u64 {
    rollup_kib(&["Private_Clean:", "Private_Dirty:"])
}

/// Proportional resident memory of this process, in KiB: each page
/// divided by the number of mappings sharing it, so the memory image's
/// page-cache pages count once over all the instances mapping them.
pub(crate) fn pss_kib() -> u64 {
    rollup_kib(&["Pss:"])
}

/// The sum of `fields` in `/proc/self/smaps_rollup`, in KiB.
fn rollup_kib(fields: &[&str]) -> u64 {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    rollup
        .lines()
        .filter(|line| fields.iter().any(|field| line.starts_with(field)))
        .filter_map(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// Resets VmHWM to the current RSS (Linux: `5` into `clear_refs`).
pub(crate) fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
