//! What a `sudo` command line asks for (the options E2B's Debian `sudo`
//! takes that make sense here), and the messages its client and envd
//! exchange.

use serde::{Deserialize, Serialize};

/// The first message, client to envd (its stdin, stdout and stderr ride
/// along as `SCM_RIGHTS`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The command and its arguments (empty with `-i` or `-s` alone).
    pub argv: Vec<String>,
    /// The user to run it as (`-u`; `root` by default).
    pub user: String,
    /// `-i`: the target's login shell runs the command, in its home.
    pub login: bool,
    /// `-s`: the caller's `$SHELL` runs the command.
    pub shell: bool,
    /// Which of the caller's variables the command keeps.
    pub preserve: Preserve,
    /// `VAR=value` arguments before the command.
    pub set_env: Vec<(String, String)>,
    /// The caller's working directory.
    pub cwd: String,
    /// The caller's environment.
    pub env: Vec<(String, String)>,
}

/// `-E` and `--preserve-env=LIST`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Preserve {
    /// sudo's `env_reset`: a few variables only.
    Reset,
    /// `-E`: the whole environment.
    All,
    /// `--preserve-env=A,B`: these besides the few.
    Only(Vec<String>),
}

/// envd's one answer: how the command ended, or why it did not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reply {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// It could not run (sudo's own message, exit code 1).
    Failed(String),
}

/// A later message, client to envd: a signal the client received, for
/// the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forward {
    /// The signal's number.
    pub signal: i32,
}

/// What a command line asks the client to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// Run a command through envd (the caller's cwd and environment are
    /// filled in by the client).
    Run(Request),
    /// Print this and exit 0 (`-V`, `-h`, `-l`).
    Print(String),
    /// Nothing to do, success (`-v`, `-k`, `-K`: there is no password).
    Nothing,
}

/// The usage line, as sudo prints it for a bad command line.
pub const USAGE: &str =
    "usage: sudo [-EHiknSsv] [-u user] [--preserve-env=list] [VAR=value] [command [arg ...]]";

/// Parses `args` (without `argv[0]`). `Err` is sudo's message for a bad
/// command line (exit 1).
pub fn parse(args: &[String]) -> Result<Invocation, String> {
    let mut req = Request {
        argv: Vec::new(),
        user: "root".into(),
        login: false,
        shell: false,
        preserve: Preserve::Reset,
        set_env: Vec::new(),
        cwd: String::new(),
        env: Vec::new(),
    };
    let mut only_flags = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            let mut value_or_next = || value.clone().or_else(|| rest.next().cloned());
            match name {
                "user" => {
                    req.user = value_or_next().ok_or("sudo: option requires an argument -- 'u'")?
                }
                "preserve-env" => {
                    req.preserve = match value {
                        None => Preserve::All,
                        Some(list) => Preserve::Only(list.split(',').map(str::to_string).collect()),
                    }
                }
                "login" => req.login = true,
                "shell" => req.shell = true,
                "set-home" | "non-interactive" | "stdin" => {}
                "reset-timestamp" | "remove-timestamp" | "validate" => {
                    only_flags = Some(Invocation::Nothing)
                }
                "version" => return Ok(Invocation::Print(version())),
                "help" => return Ok(Invocation::Print(format!("{USAGE}\n"))),
                "list" => return Ok(Invocation::Print(listing())),
                _ => return Err(format!("sudo: unrecognized option '--{name}'\n{USAGE}")),
            }
            continue;
        }
        let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
            // The first operand: variables, then the command.
            req.argv.push(arg.clone());
            break;
        };
        let mut chars = flags.chars();
        while let Some(flag) = chars.next() {
            match flag {
                'u' => {
                    let attached: String = chars.by_ref().collect();
                    req.user = if attached.is_empty() {
                        rest.next()
                            .cloned()
                            .ok_or("sudo: option requires an argument -- 'u'")?
                    } else {
                        attached
                    };
                }
                'E' => req.preserve = Preserve::All,
                'i' => req.login = true,
                's' => req.shell = true,
                'H' | 'n' | 'S' => {}
                'k' | 'K' | 'v' => only_flags = Some(Invocation::Nothing),
                'V' => return Ok(Invocation::Print(version())),
                'h' => return Ok(Invocation::Print(format!("{USAGE}\n"))),
                'l' => return Ok(Invocation::Print(listing())),
                other => return Err(format!("sudo: invalid option -- '{other}'\n{USAGE}")),
            }
        }
    }
    req.argv.extend(rest.cloned());
    // Leading VAR=value operands set variables for the command.
    while let Some((name, value)) = req.argv.first().and_then(|a| assignment(a)) {
        req.set_env.push((name, value));
        req.argv.remove(0);
    }
    if req.login && req.shell {
        return Err(format!(
            "sudo: you may not specify both the -i and -s options\n{USAGE}"
        ));
    }
    if req.argv.is_empty() && !req.login && !req.shell {
        return match only_flags {
            Some(nothing) => Ok(nothing),
            None => Err(USAGE.to_string()),
        };
    }
    Ok(Invocation::Run(req))
}

/// `NAME=value` with a shell variable's name.
fn assignment(arg: &str) -> Option<(String, String)> {
    let (name, value) = arg.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then(|| (name.to_string(), value.to_string()))
}

fn version() -> String {
    "Sudo version 1.9.13p3 (the local E2B server's: envd runs the command as the sandbox's own root)\n"
        .into()
}

fn listing() -> String {
    "User user may run the following commands on e2b:\n    (ALL : ALL) NOPASSWD: ALL\n".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str) -> Request {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        match parse(&args) {
            Ok(Invocation::Run(req)) => req,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn options_then_variables_then_the_command() {
        let req = run("-E -u user FOO=1 _B=2 env -i X=3");
        assert_eq!(req.user, "user");
        assert_eq!(req.preserve, Preserve::All);
        assert_eq!(
            req.set_env,
            [("FOO".into(), "1".into()), ("_B".into(), "2".into())]
        );
        assert_eq!(req.argv, ["env", "-i", "X=3"]);
        let req = run("-nHuuser -- -weird arg");
        assert_eq!(
            (req.user.as_str(), &req.argv[..]),
            ("user", &["-weird".to_string(), "arg".into()][..])
        );
        let req = run("--user=root --preserve-env=TERM,FOO id -u");
        assert_eq!(
            req.preserve,
            Preserve::Only(vec!["TERM".into(), "FOO".into()])
        );
        assert_eq!(req.argv, ["id", "-u"]);
        assert!(run("-i").login && run("-s").shell);
        // A leading '=' or a digit is no variable: it is the command.
        assert_eq!(run("1A=b x").argv, ["1A=b", "x"]);
    }

    #[test]
    fn what_needs_no_command_and_what_is_refused() {
        let parse = |line: &str| {
            parse(
                &line
                    .split_whitespace()
                    .map(String::from)
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(parse("-v"), Ok(Invocation::Nothing));
        assert_eq!(parse("-k"), Ok(Invocation::Nothing));
        assert!(matches!(parse("-V"), Ok(Invocation::Print(v)) if v.starts_with("Sudo version")));
        assert!(matches!(parse("-l"), Ok(Invocation::Print(v)) if v.contains("NOPASSWD: ALL")));
        assert_eq!(parse(""), Err(USAGE.to_string()));
        assert_eq!(parse("FOO=1"), Err(USAGE.to_string()));
        assert!(parse("-x id")
            .unwrap_err()
            .starts_with("sudo: invalid option -- 'x'"));
        assert!(parse("--bogus id")
            .unwrap_err()
            .starts_with("sudo: unrecognized option"));
        assert!(parse("-u").unwrap_err().contains("requires an argument"));
        assert!(parse("-i -s").unwrap_err().contains("both the -i and -s"));
    }
}
