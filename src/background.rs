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

use crate::args::{Offsets, StopSignal};
use crate::errors::{ErrorKind, Failure};
use crate::redact::Secrets;

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

/// Prints `STATE CODE STDOUT_SIZE STDERR_SIZE`, then up to `limit` bytes of
/// each stream from `since` in base64, one line each.
pub fn output_script(pid: u32, since: Offsets, limit: usize) -> String {
    let Offsets { stdout, stderr } = since;
    format!(
        r#"{common}s=exited; c=-; [ "$(st {pid})" = "$s0" ] && s=running
[ $s = exited ] && c=$(code)
so=$(wc -c < "$d/stdout" 2>/dev/null) || so=0; se=$(wc -c < "$d/stderr" 2>/dev/null) || se=0
echo "$s $c $so $se"
chunk() {{ local n=$(( $3 - $2 )); (( n > {limit} )) && n={limit}; if (( n > 0 )); then tail -c +$(( $2 + 1 )) "$1" | head -c $n | base64 | tr -d '\n'; fi; echo; }}
chunk "$d/stdout" {stdout} "$so"; chunk "$d/stderr" {stderr} "$se"
"#,
        common = common(pid),
    )
}

/// Sends `signal` to the process and its descendants at once, waits up to
/// [`STOP_GRACE_MS`], then SIGKILLs what is left. (No SIGSTOP freeze
/// first: a stop propagates to whatever waits on the process, such as
/// `nsenter`, which then never reaps it.) Prints
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
    let (stdout, next_out) = field(lines.next(), since.stdout, out_size, limit, secrets)?;
    let (stderr, next_err) = field(lines.next(), since.stderr, err_size, limit, secrets)?;
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

/// One stream's chunk (`line`, base64) read from `offset` of `size`
/// bytes: its text cut at a whole character, redacted, with the
/// truncation marker for what follows it, and the offset after it.
fn field(
    line: Option<&str>,
    offset: u64,
    size: u64,
    limit: usize,
    secrets: &Secrets,
) -> Result<(String, u64), Failure> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(line.unwrap_or_default().trim())
        .map_err(|_| malformed())?;
    let remaining = size - offset;
    if bytes.len() > limit || bytes.len() as u64 > remaining {
        return Err(malformed());
    }
    let more = (bytes.len() as u64) < remaining;
    let cut = if more {
        whole_chars(&bytes)
    } else {
        bytes.len()
    };
    let mut text = secrets.redact(&String::from_utf8_lossy(&bytes[..cut]));
    let shown = cut as u64;
    if shown < remaining {
        text.push_str(&crate::truncate::marker(remaining - shown));
    }
    Ok((text, offset + shown))
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
        );
        assert!(s.contains("d=/tmp/.e2b-tools/background/42\n"));
        assert!(s.contains(r#"chunk "$d/stdout" 7 "$so"; chunk "$d/stderr" 9 "$se""#));
        let s = stop_script(42, StopSignal::Int);
        assert!(s.contains("kill -INT $(live)"));
        assert!(s.contains("i<50;"));
        assert!(wrap("echo hi").ends_with("\necho hi"));
    }
}
