//! Background process control (`get_background_output`,
//! `stop_background_command`): the bash the sandbox runs, and the parsing
//! of what it answers.
//!
//! The output of a background process is kept **in the sandbox**, not in
//! the component: when one of the two tools is enabled, the command given
//! to `start_background_command` runs behind a [`wrap`] prelude that tees
//! its stdout and stderr into files under [`LOG_DIR`]`/<pid>/` (the first
//! [`LOG_CAP_BYTES`] of each), and records its start time and exit code
//! there. Why not envd's `Connect` stream: it only carries output from the
//! moment of attaching, and holding it open would need a connection per
//! process that outlives the call, which the stateless component (a fresh
//! instance per call) cannot have and the embedding one would have to
//! buffer without bound. Files in the sandbox survive instance restarts,
//! cost the component nothing between calls, and are read by offset.
//!
//! Everything the sandbox answers is treated as hostile: the scripts print
//! a fixed, sanitised header and base64, and [`parse_output`] /
//! [`parse_stop`] refuse anything else. Only numbers and fixed words of
//! ours are put into the scripts.

use super::{Offsets, StopSignal};
use crate::errors::{ErrorKind, Failure};
use crate::output::redact::{Secrets, REDACTED};
use std::ops::Range;

/// Where each wrapped process keeps `start`, `stdout`, `stderr`, `exit`.
pub const LOG_DIR: &str = "/tmp/.e2b-tools/background";
/// Bytes of each stream kept in the sandbox; later output still reaches
/// the start's stream, but is not kept for `get_background_output`.
pub const LOG_CAP_BYTES: u64 = 64 << 20;
/// How long `stop_background_command` waits after its signal before
/// SIGKILL.
pub const STOP_GRACE_MS: u32 = 5_000;
/// How long the SIGKILL is given to take effect.
const KILL_WAIT_MS: u32 = 2_000;

/// The command `start_background_command` hands envd when the output is
/// kept: the prelude, then the model's command on its own lines. `head`
/// caps each file, unbuffered (`stdbuf -o0`) so the file is current.
/// Without GNU `tee -p` and `stdbuf` (another template) the command runs
/// unwrapped, as before.
pub fn wrap(command: &str) -> String {
    format!(
        r#"__e2b_d={LOG_DIR}/$$; if mkdir -p "$__e2b_d" 2>/dev/null && tee -p </dev/null >/dev/null 2>&1 && command -v stdbuf >/dev/null; then rm -f "$__e2b_d/exit"; read -r __e2b_s < /proc/$$/stat; __e2b_s=${{__e2b_s##*) }}; read -ra __e2b_s <<< "$__e2b_s"; echo "${{__e2b_s[19]}}" > "$__e2b_d/start"; exec > >(exec tee -p >(exec stdbuf -o0 head -c {LOG_CAP_BYTES} > "$__e2b_d/stdout")) 2> >(exec tee -p >(exec stdbuf -o0 head -c {LOG_CAP_BYTES} > "$__e2b_d/stderr") >&2); trap "echo \$? > $__e2b_d/exit" EXIT; fi; unset __e2b_d __e2b_s
{command}"#
    )
}

/// Shell functions both scripts use: `st PID` prints a live (not zombie)
/// process's start time; `ours` answers `unknown` or `foreign` and exits
/// unless `$d` is a wrapped process's directory; `code` reads its recorded
/// exit code (`-` when none, or when not a number).
fn common(pid: u32) -> String {
    format!(
        r#"d={LOG_DIR}/{pid}
st() {{ local l; read -r l < /proc/$1/stat || return 1; l=${{l##*) }}; local -a f; read -ra f <<< "$l"; [ "${{f[0]}}" != Z ] && [ "${{f[0]}}" != X ] && echo "${{f[19]}}"; }} 2>/dev/null
if [ ! -r "$d/start" ]; then if [ -e /proc/{pid} ]; then echo foreign; else echo unknown; fi; exit 0; fi
read -r s0 < "$d/start"
code() {{ local c=-; [ -r "$d/exit" ] && read -r c < "$d/exit"; [[ $c =~ ^-?[0-9]{{1,10}}$ ]] || c=-; echo "$c"; }}
"#
    )
}

/// How many bytes the output script reads on each side of a page:
/// enough to hold all of a secret but one byte, so that a secret the
/// model-chosen page boundaries cut is still recognised (and masked) in
/// the page.
pub fn context_bytes(secrets: &Secrets) -> usize {
    secrets.longest().saturating_sub(1)
}

/// The byte range `[start, end)` of a `size`-byte stream that the output
/// script reads for a page of at most `limit` bytes from `since`: the page
/// and `context` bytes on either side, within the stream. The script
/// computes the same in bash.
fn window(since: u64, size: u64, limit: usize, context: usize) -> (u64, u64) {
    let start = since.saturating_sub(context as u64);
    let end = since
        .saturating_add(limit as u64)
        .saturating_add(context as u64)
        .min(size);
    (start, end.max(start))
}

/// Prints `STATE CODE STDOUT_SIZE STDERR_SIZE`, then, for each stream, in
/// base64 on a line of its own, its bytes from `context` before `since` to
/// `context` after the page of `limit` bytes there (see `window`).
pub fn output_script(pid: u32, since: Offsets, limit: usize, context: usize) -> String {
    let Offsets { stdout, stderr } = since;
    format!(
        r#"{common}s=exited; c=-; [ "$(st {pid})" = "$s0" ] && s=running
[ $s = exited ] && c=$(code)
so=$(wc -c < "$d/stdout" 2>/dev/null) || so=0; se=$(wc -c < "$d/stderr" 2>/dev/null) || se=0
echo "$s $c $so $se"
chunk() {{ local a=$(( $2 - {context} )) b=$(( $2 + {limit} + {context} )); (( a < 0 )) && a=0; (( b > $3 )) && b=$3; if (( b > a )); then tail -c +$(( a + 1 )) "$1" | head -c $(( b - a )) | base64 | tr -d '\n'; fi; echo; }}
chunk "$d/stdout" {stdout} "$so"; chunk "$d/stderr" {stderr} "$se"
"#,
        common = common(pid),
    )
}

/// The most the output script prints for a page of `limit` bytes with
/// `context` bytes either side: the header and two base64 lines.
pub fn output_answer_bound(limit: usize, context: usize) -> usize {
    let window = limit.saturating_add(context.saturating_mul(2));
    (window / 3 + 1).saturating_mul(4).saturating_mul(2) + 256
}

/// Sends `signal` to the process and its descendants at once, waits up to
/// [`STOP_GRACE_MS`], then SIGKILLs what is left. (No SIGSTOP freeze
/// first: a stop propagates to whatever waits on the process, which then
/// may never reap it.) Prints
/// `exited CODE SIGNAL` (SIGNAL `-` if it had exited already) or
/// `running - SIGNAL` if even SIGKILL did not end it.
pub fn stop_script(pid: u32, signal: StopSignal) -> String {
    let sig = signal.short_name();
    let grace_ticks = STOP_GRACE_MS / 100;
    let kill_ticks = KILL_WAIT_MS / 100;
    format!(
        r#"{common}if [ "$(st {pid})" != "$s0" ]; then echo "exited $(code) -"; exit 0; fi
tree() {{ local -A kids; local f l p q; local -a x todo=({pid}) out=()
  for f in /proc/[0-9]*/stat; do read -r l < "$f" 2>/dev/null || continue; p=${{f#/proc/}}; p=${{p%/stat}}; l=${{l##*) }}; read -ra x <<< "$l"; kids[${{x[1]}}]+=" $p"; done
  while (( ${{#todo[@]}} )); do q=${{todo[0]}}; todo=("${{todo[@]:1}}"); out+=("$q"); todo+=(${{kids[$q]}}); done
  for p in "${{out[@]}}"; do q=$(st $p) && echo "$p:$q"; done; }}
live() {{ local x; for x in $t; do [ "$(st ${{x%%:*}})" = "${{x#*:}}" ] && echo ${{x%%:*}}; done; }}
t=$(tree); kill -{sig} $(live) 2>/dev/null; sig={sig}
for ((i=0;i<{grace_ticks};i++)); do [ -z "$(live)" ] && break; sleep 0.1; done
if [ -n "$(live)" ]; then sig=KILL; kill -KILL $(live) 2>/dev/null; for ((i=0;i<{kill_ticks};i++)); do [ -z "$(live)" ] && break; sleep 0.1; done; fi
if [ "$(st {pid})" = "$s0" ]; then echo "running - SIG$sig"; exit 0; fi
echo -1 > "$d/exit"; echo "exited -1 SIG$sig"
"#,
        common = common(pid),
    )
}

/// How long the stop script may take, in milliseconds.
pub const STOP_SCRIPT_MS: u64 = (STOP_GRACE_MS + KILL_WAIT_MS) as u64 + 10_000;

/// Whether a background process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessState {
    /// It runs.
    Running,
    /// It exited (or was killed).
    Exited,
}

impl ProcessState {
    /// The JSON string.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessState::Running => "running",
            ProcessState::Exited => "exited",
        }
    }
}

/// What `get_background_output` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOutput {
    /// The process.
    pub pid: u32,
    /// Whether it still runs.
    pub state: ProcessState,
    /// Its exit code once exited (-1 when killed by a signal; `None` when
    /// it left none, as after SIGKILL from elsewhere).
    pub exit_code: Option<i32>,
    /// Its stdout from the requested offset, truncated.
    pub stdout: String,
    /// Its stderr from the requested offset, truncated.
    pub stderr: String,
    /// The offsets just past what `stdout` and `stderr` hold.
    pub next_since: Offsets,
}

/// What `stop_background_command` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoppedProcess {
    /// The process.
    pub pid: u32,
    /// Its exit code (-1: killed by a signal), if known.
    pub exit_code: Option<i32>,
    /// The signal that ended it; `None` if it had exited already.
    pub signal: Option<StopSignal>,
}

fn not_ours(pid: u32, word: &str) -> Option<Failure> {
    match word {
        "unknown" => Some(Failure::new(
            ErrorKind::NotFound,
            format!("no process with pid {pid} was started by start_background_command in this sandbox"),
        )),
        "foreign" => Some(Failure::new(
            ErrorKind::NotFound,
            format!("process {pid} was not started by start_background_command (only those can be read or stopped)"),
        )),
        _ => None,
    }
}

fn malformed() -> Failure {
    Failure::new(
        ErrorKind::Internal,
        "the sandbox answered the process query in an unexpected form",
    )
}

/// A recorded exit code; `-` or anything not an `i32` (the file is the
/// sandbox's to scribble on) is unknown.
fn exit_code(word: &str) -> Option<i32> {
    word.parse().ok()
}

/// Parses the output script's answer (`text`, its stdout) for a request
/// from `since` with `limit` bytes per stream, redacting `secrets`.
pub fn parse_output(
    pid: u32,
    text: &str,
    since: Offsets,
    limit: usize,
    secrets: &Secrets,
) -> Result<ProcessOutput, Failure> {
    let mut lines = text.split('\n');
    let header = lines.next().unwrap_or_default().trim();
    if let Some(failure) = not_ours(pid, header) {
        return Err(failure);
    }
    let words: Vec<&str> = header.split(' ').collect();
    let [state, code, out_size, err_size] = words[..] else {
        return Err(malformed());
    };
    let state = match state {
        "running" => ProcessState::Running,
        "exited" => ProcessState::Exited,
        _ => return Err(malformed()),
    };
    let size = |w: &str| w.trim().parse::<u64>().map_err(|_| malformed());
    let (out_size, err_size) = (size(out_size)?, size(err_size)?);
    for (name, offset, size) in [
        ("stdout", since.stdout, out_size),
        ("stderr", since.stderr, err_size),
    ] {
        if offset > size {
            return Err(Failure::new(
                ErrorKind::InvalidArgument,
                format!("since.{name} is {offset}, past the end of the output kept ({size} bytes)"),
            ));
        }
    }
    // A stream is complete when nothing more can be written to it: the
    // process is gone, or the wrapper's cap is reached.
    let complete = |size: u64| state == ProcessState::Exited || size >= LOG_CAP_BYTES;
    let (stdout, next_out) = field(
        lines.next(),
        since.stdout,
        out_size,
        limit,
        complete(out_size),
        secrets,
    )?;
    let (stderr, next_err) = field(
        lines.next(),
        since.stderr,
        err_size,
        limit,
        complete(err_size),
        secrets,
    )?;
    Ok(ProcessOutput {
        pid,
        state,
        exit_code: match state {
            ProcessState::Running => None,
            ProcessState::Exited => exit_code(code),
        },
        stdout,
        stderr,
        next_since: Offsets {
            stdout: next_out,
            stderr: next_err,
        },
    })
}

/// One stream's page: `line` is the base64 of the [`window`] the script
/// read around the page from `offset` of `size` bytes. Returns the page's
/// text, cut at a whole character, with every byte that belongs to a
/// secret in the window masked, and the truncation marker for what follows
/// it; and the offset after it.
///
/// Secrets are looked for in the whole window, not the page alone: the
/// model picks `offset` and the limit cuts the page, so either edge may
/// fall inside a secret, and a page redacted on its own would show the
/// pieces. Where the bytes after the window are not known yet (a running
/// process, or a window shorter than asked) and a secret may begin in the
/// page and run past them, the page ends before it; `complete` says the
/// stream can grow no more.
fn field(
    line: Option<&str>,
    offset: u64,
    size: u64,
    limit: usize,
    complete: bool,
    secrets: &Secrets,
) -> Result<(String, u64), Failure> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(line.unwrap_or_default().trim())
        .map_err(|_| malformed())?;
    let context = context_bytes(secrets);
    let (start, end) = window(offset, size, limit, context);
    // The window starts where asked (`tail -c`); it holds no more than
    // asked, and the bytes before `offset` (which exist: it is within
    // `size`).
    let lead = (offset - start) as usize;
    if bytes.len() as u64 > end - start || bytes.len() < lead {
        return Err(malformed());
    }
    let mut page_end = lead + limit.min(bytes.len() - lead);
    let tail_known = complete && start + bytes.len() as u64 == size;
    if !tail_known && bytes.len() - page_end < context {
        if let Some(pending) = secrets.pending_start(&bytes) {
            page_end = page_end.min(pending.max(lead));
        }
    }
    let remaining = size - offset;
    let mut shown = page_end - lead;
    if (shown as u64) < remaining {
        shown = whole_chars(&bytes[lead..page_end]);
    }
    let mut text = masked(&bytes, lead..lead + shown, &secrets.covered(&bytes));
    if (shown as u64) < remaining {
        text.push_str(&crate::output::truncate::marker(remaining - shown as u64));
    }
    Ok((text, offset + shown as u64))
}

/// The text of `bytes[page]`, each run of bytes within `covered` (sorted,
/// disjoint ranges of `bytes`) replaced by one [`REDACTED`].
fn masked(bytes: &[u8], page: Range<usize>, covered: &[Range<usize>]) -> String {
    let mut text = String::new();
    let mut at = page.start;
    for secret in covered {
        if secret.end <= at || secret.start >= page.end {
            continue;
        }
        text.push_str(&String::from_utf8_lossy(&bytes[at..secret.start.max(at)]));
        text.push_str(REDACTED);
        at = secret.end.min(page.end);
    }
    text.push_str(&String::from_utf8_lossy(&bytes[at..page.end]));
    text
}

/// The length of the longest prefix of `bytes` that does not end inside a
/// UTF-8 character (invalid bytes count as whole).
fn whole_chars(bytes: &[u8]) -> usize {
    // The last character starts at most 3 bytes before the end.
    for back in 1..=bytes.len().min(4) {
        let start = bytes.len() - back;
        let b = bytes[start];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte
        }
        let width = match b {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if back < width { start } else { bytes.len() };
    }
    bytes.len()
}

/// Parses the stop script's answer.
pub fn parse_stop(pid: u32, text: &str) -> Result<StoppedProcess, Failure> {
    let header = text.split('\n').next().unwrap_or_default().trim();
    if let Some(failure) = not_ours(pid, header) {
        return Err(failure);
    }
    let words: Vec<&str> = header.split(' ').collect();
    let [state, code, signal] = words[..] else {
        return Err(malformed());
    };
    let signal = match signal {
        "-" => None,
        s => Some(StopSignal::parse(s).ok_or_else(malformed)?),
    };
    match state {
        "exited" => Ok(StoppedProcess {
            pid,
            exit_code: exit_code(code),
            signal,
        }),
        "running" => Err(Failure::new(
            ErrorKind::Internal,
            format!("process {pid} is still running after SIGKILL"),
        )),
        _ => Err(malformed()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    const KEY: &str = "e2b_0123456789abcdefghij";

    /// What the output script prints for these streams: the header, then
    /// each stream's [`window`] around the page, in base64.
    fn answer(state: &str, out: &[u8], err: &[u8], since: Offsets, limit: usize) -> String {
        let context = context_bytes(&Secrets::new([KEY]));
        let chunk = |data: &[u8], since: u64| {
            let (start, end) = window(since, data.len() as u64, limit, context);
            b64(&data[start as usize..end as usize])
        };
        format!(
            "{state} {} {} {}\n{}\n{}\n",
            if state == "exited" { "0" } else { "-" },
            out.len(),
            err.len(),
            chunk(out, since.stdout),
            chunk(err, since.stderr)
        )
    }

    /// Every 8-byte piece of the key found in `text`.
    fn key_pieces(text: &str) -> Vec<&'static str> {
        (0..=KEY.len() - 8)
            .map(|i| &KEY[i..i + 8])
            .filter(|piece| text.contains(piece))
            .collect()
    }

    #[test]
    fn a_page_cut_anywhere_across_a_secret_shows_no_piece_of_it() {
        let secrets = Secrets::new([KEY]);
        let stream = format!("before {KEY} after").into_bytes();
        let key_at = "before ".len();
        let other = b"nothing to hide".as_slice();
        for state in ["running", "exited"] {
            // A page from every offset before or in the key to every
            // offset in or after it, on stdout and on stderr.
            for from in key_at - 2..key_at + KEY.len() {
                for to in from + 1..=key_at + KEY.len() + 2 {
                    let limit = to - from;
                    let (on_out, on_err) = (
                        Offsets {
                            stdout: from as u64,
                            stderr: 0,
                        },
                        Offsets {
                            stdout: 0,
                            stderr: from as u64,
                        },
                    );
                    for (since, text) in [
                        (on_out, answer(state, &stream, other, on_out, limit)),
                        (on_err, answer(state, other, &stream, on_err, limit)),
                    ] {
                        let out = parse_output(9, &text, since, limit, &secrets).unwrap();
                        let (page, next) = if since == on_out {
                            (&out.stdout, out.next_since.stdout)
                        } else {
                            (&out.stderr, out.next_since.stderr)
                        };
                        let pieces = key_pieces(page);
                        assert!(pieces.is_empty(), "{state} {from}..{to}: {page}");
                        // The offset moves on by the page, no more, no less.
                        assert_eq!(next, to as u64, "{state} {from}..{to}");
                    }
                }
            }
        }
    }

    #[test]
    fn pages_in_a_row_cover_the_stream_and_hide_only_the_secret() {
        let secrets = Secrets::new([KEY]);
        let stream = format!("before {KEY} after {KEY}").into_bytes();
        for limit in 1..=30 {
            let (mut since, mut shown) = (Offsets::default(), String::new());
            while since.stdout < stream.len() as u64 {
                let text = answer("exited", &stream, b"", since, limit);
                let out = parse_output(9, &text, since, limit, &secrets).unwrap();
                assert!(out.next_since.stdout > since.stdout, "limit {limit}");
                let rest = stream.len() as u64 - out.next_since.stdout;
                let page = if rest > 0 {
                    let marker = crate::output::truncate::marker(rest);
                    out.stdout.strip_suffix(&marker).unwrap().to_string()
                } else {
                    out.stdout.clone()
                };
                shown.push_str(&page);
                since = out.next_since;
            }
            assert!(key_pieces(&shown).is_empty(), "limit {limit}: {shown}");
            assert_eq!(
                shown.replace(REDACTED, ""),
                "before  after ",
                "limit {limit}: {shown}"
            );
        }
    }

    #[test]
    fn a_running_process_that_has_printed_part_of_a_secret_shows_none_of_it() {
        let secrets = Secrets::new([KEY]);
        let whole = format!("key: {KEY} done");
        for printed in "key: ".len()..=whole.len() {
            for limit in [4, 9, 100] {
                // The page as far as the process got, from every offset.
                for from in 0..printed {
                    let since = Offsets {
                        stdout: from as u64,
                        stderr: 0,
                    };
                    let early = &whole.as_bytes()[..printed];
                    let text = answer("running", early, b"", since, limit);
                    let first = parse_output(9, &text, since, limit, &secrets).unwrap();
                    // Then the next page once the process has printed all.
                    let text = answer("running", whole.as_bytes(), b"", first.next_since, limit);
                    let second = parse_output(9, &text, first.next_since, limit, &secrets).unwrap();
                    let both = format!("{}\n{}", first.stdout, second.stdout);
                    assert!(
                        key_pieces(&both).is_empty(),
                        "printed {printed}, from {from}, limit {limit}: {both}"
                    );
                }
            }
        }
        // Once it has exited, a prefix of a secret is no secret: shown.
        let early = format!("key: {}", &KEY[..10]);
        let text = answer("exited", early.as_bytes(), b"", Offsets::default(), 100);
        let out = parse_output(9, &text, Offsets::default(), 100, &secrets).unwrap();
        assert_eq!(out.stdout, early);
    }

    #[test]
    fn a_window_short_of_its_context_is_refused_or_read_with_care() {
        let secrets = Secrets::new([KEY]);
        let stream = format!("before {KEY} after");
        let since = Offsets {
            stdout: 10,
            stderr: 0,
        };
        let size = stream.len();
        // Without the bytes before the page: refused.
        let text = format!("exited 0 {size} 0\n{}\n\n", b64(&stream.as_bytes()[10..15]));
        let err = parse_output(9, &text, since, 10, &secrets).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Internal);
        // Without the bytes after it: the page ends before the secret.
        let text = format!("exited 0 {size} 0\n{}\n\n", b64(&stream.as_bytes()[..20]));
        let out = parse_output(9, &text, since, 10, &secrets).unwrap();
        assert!(key_pieces(&out.stdout).is_empty(), "{}", out.stdout);
        assert_eq!(out.next_since.stdout, 10);
    }

    #[test]
    fn output_is_read_from_the_offsets_and_truncated_at_a_whole_character() {
        let none = Secrets::default();
        // 12 bytes of stdout after offset 3; a limit of 5 cuts "é" (2 bytes
        // at 4..6) out of the chunk "abcdé".
        let answer = format!(
            "running - 15 2\n{}\n{}\n",
            b64(&"abcd\u{e9}".as_bytes()[..5]),
            b64(b"ok")
        );
        let out = parse_output(
            9,
            &answer,
            Offsets {
                stdout: 3,
                stderr: 0,
            },
            5,
            &none,
        )
        .unwrap();
        assert_eq!(out.state, ProcessState::Running);
        assert_eq!(out.exit_code, None);
        assert_eq!(out.stdout, "abcd…[truncated 8 bytes]");
        assert_eq!(out.stderr, "ok");
        assert_eq!(
            out.next_since,
            Offsets {
                stdout: 7,
                stderr: 2
            }
        );
    }

    #[test]
    fn an_exited_process_has_its_code_and_secrets_are_redacted() {
        let secrets = Secrets::new(["e2b_key"]);
        let answer = format!("exited 3 11 0\n{}\n\n", b64(b"key=e2b_key"));
        let out = parse_output(9, &answer, Offsets::default(), 100, &secrets).unwrap();
        assert_eq!((out.state, out.exit_code), (ProcessState::Exited, Some(3)));
        assert_eq!(out.stdout, "key=<redacted>");
        assert_eq!(out.next_since.stdout, 11);
    }

    #[test]
    fn pids_not_ours_and_offsets_past_the_end_are_clear_failures() {
        let none = Secrets::default();
        let err = parse_output(4, "unknown\n", Offsets::default(), 10, &none).unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert!(
            err.message.contains("no process with pid 4"),
            "{}",
            err.message
        );
        let err = parse_stop(1, "foreign\n").unwrap_err();
        assert!(
            err.message.contains("process 1 was not started"),
            "{}",
            err.message
        );
        let err = parse_output(
            4,
            "running - 5 0\n\n\n",
            Offsets {
                stdout: 6,
                stderr: 0,
            },
            10,
            &none,
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
        assert!(
            err.message.contains("since.stdout is 6, past the end"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_hostile_answer_is_refused_not_believed() {
        let none = Secrets::default();
        for answer in [
            "",
            "running",
            "running - x 0\n\n\n",
            "sleeping - 1 1\n\n\n",
            // More bytes than asked for, or than the size says.
            &format!("running - 100 0\n{}\n\n", b64(&[b'a'; 11])),
            &format!("running - 3 0\n{}\n\n", b64(b"abcd")),
            "running - 4 0\n!!notbase64\n\n",
        ] {
            let err = parse_output(2, answer, Offsets::default(), 10, &none).unwrap_err();
            assert_eq!(err.kind, ErrorKind::Internal, "{answer:?}");
        }
        for answer in ["exited", "exited -1 SIGFOO", "gone - -"] {
            assert_eq!(
                parse_stop(2, answer).unwrap_err().kind,
                ErrorKind::Internal,
                "{answer}"
            );
        }
    }

    #[test]
    fn a_stop_reports_the_signal_that_ended_the_process() {
        let stopped = parse_stop(5, "exited -1 SIGKILL\n").unwrap();
        assert_eq!(stopped.exit_code, Some(-1));
        assert_eq!(stopped.signal, Some(StopSignal::Kill));
        let already = parse_stop(5, "exited 0 -\n").unwrap();
        assert_eq!((already.exit_code, already.signal), (Some(0), None));
        // A code the sandbox scribbled over is unknown, not believed.
        assert_eq!(parse_stop(5, "exited 1e9 -").unwrap().exit_code, None);
        let err = parse_stop(5, "running - SIGKILL").unwrap_err();
        assert!(err.message.contains("still running after SIGKILL"));
    }

    #[test]
    fn whole_chars_never_ends_inside_a_character() {
        assert_eq!(whole_chars(b"abc"), 3);
        assert_eq!(whole_chars("a\u{e9}".as_bytes()), 3);
        assert_eq!(whole_chars(&"a\u{e9}".as_bytes()[..2]), 1);
        assert_eq!(whole_chars(&"\u{1F600}".as_bytes()[..3]), 0);
        assert_eq!(whole_chars(&[0xFF, 0xFF]), 2);
    }

    #[test]
    fn scripts_carry_only_our_numbers_and_words() {
        let s = output_script(
            42,
            Offsets {
                stdout: 7,
                stderr: 9,
            },
            100,
            19,
        );
        assert!(s.contains("d=/tmp/.e2b-tools/background/42\n"));
        assert!(s.contains("local a=$(( $2 - 19 )) b=$(( $2 + 100 + 19 ))"));
        assert!(s.contains(r#"chunk "$d/stdout" 7 "$so"; chunk "$d/stderr" 9 "$se""#));
        let s = stop_script(42, StopSignal::Int);
        assert!(s.contains("kill -INT $(live)"));
        assert!(s.contains("i<50;"));
        assert!(wrap("echo hi").ends_with("\necho hi"));
    }
}
