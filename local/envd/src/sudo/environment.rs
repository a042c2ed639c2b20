//! What the command of a `sudo` request runs with, by the rules of
//! Debian's `sudo` (`env_reset`, `secure_path`): which program, in which
//! directory, with which variables.

use std::collections::BTreeMap;

use e2b_wire::envd_setup::SandboxUser;

use super::invocation::{Preserve, Request};

/// The variables `env_reset` keeps from the caller (sudo's defaults).
const KEPT: &[&str] = &[
    "TERM",
    "COLORS",
    "DISPLAY",
    "HOSTNAME",
    "KRB5CCNAME",
    "LS_COLORS",
    "PS1",
    "PS2",
    "TZ",
    "XAUTHORITY",
    "XAUTHORIZATION",
    "XDG_CURRENT_DESKTOP",
];

/// The login shell of every sandbox user.
const SHELL: &str = "/bin/bash";

/// The longest `SUDO_COMMAND` (sudo cuts it too).
const MAX_SUDO_COMMAND: usize = 4096;

/// Who asked, as the kernel says (`SO_PEERCRED`), never as the request
/// says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    /// Its uid inside the sandbox.
    pub uid: u32,
    /// Its gid inside the sandbox.
    pub gid: u32,
}

impl Caller {
    fn name(self) -> String {
        match self.uid {
            0 => "root".into(),
            e2b_wire::envd_setup::USER_ID => "user".into(),
            uid => format!("#{uid}"),
        }
    }
}

/// The command to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Who runs it.
    pub who: SandboxUser,
    /// The program (found on `PATH` when it has no `/`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory.
    pub cwd: String,
    /// Its whole environment.
    pub env: BTreeMap<String, String>,
}

/// The target user a `-u` names: `root` or `user`, by name or `#uid`.
pub fn target(name: &str) -> Result<SandboxUser, String> {
    match name {
        "#0" => Ok(SandboxUser::Root),
        "#1000" => Ok(SandboxUser::User),
        name => SandboxUser::from_name(name)
            .filter(|_| !name.is_empty())
            .ok_or_else(|| format!("sudo: unknown user {name}")),
    }
}

/// The command `req` from `caller` runs, with `path` as `secure_path` and
/// `home` as `user`'s home.
pub fn command(req: &Request, caller: Caller, path: &str, home: &str) -> Result<Command, String> {
    let who = target(&req.user)?;
    let target_home = match who {
        SandboxUser::Root => "/root",
        SandboxUser::User => home,
    };
    let caller_env: BTreeMap<&str, &str> = req
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (program, args) = if req.login || req.shell {
        let shell = match (req.shell, caller_env.get("SHELL")) {
            (true, Some(shell)) if !shell.is_empty() => shell.to_string(),
            _ => SHELL.to_string(),
        };
        let mut args = Vec::new();
        if req.login {
            args.push("-l".to_string());
        }
        if !req.argv.is_empty() {
            args.push("-c".into());
            args.push(shell_line(&req.argv));
        }
        (shell, args)
    } else {
        (req.argv[0].clone(), req.argv[1..].to_vec())
    };
    let mut env: BTreeMap<String, String> = match &req.preserve {
        Preserve::All => req.env.iter().cloned().collect(),
        Preserve::Reset | Preserve::Only(_) => {
            let extra: &[String] = match &req.preserve {
                Preserve::Only(names) => names,
                _ => &[],
            };
            req.env
                .iter()
                .filter(|(k, _)| KEPT.contains(&k.as_str()) || extra.contains(k))
                .cloned()
                .collect()
        }
    };
    let name = who.name();
    if req.preserve != Preserve::All || req.login {
        env.insert("HOME".into(), target_home.into());
    }
    for (key, value) in [
        ("PATH", path.to_string()),
        ("USER", name.into()),
        ("LOGNAME", name.into()),
        ("SHELL", SHELL.into()),
        ("MAIL", format!("/var/mail/{name}")),
        ("SUDO_USER", caller.name()),
        ("SUDO_UID", caller.uid.to_string()),
        ("SUDO_GID", caller.gid.to_string()),
        ("SUDO_COMMAND", sudo_command(&program, &args)),
    ] {
        env.insert(key.into(), value);
    }
    env.extend(req.set_env.iter().cloned());
    let cwd = if req.login {
        target_home.to_string()
    } else {
        req.cwd.clone()
    };
    Ok(Command {
        who,
        program,
        args,
        cwd,
        env,
    })
}

/// `-i` and `-s` hand the command to a shell as one line, with every
/// character but letters, digits, `_`, `-` and `$` escaped (sudo's rule).
fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|arg| {
            arg.chars()
                .flat_map(|c| {
                    let plain = c.is_alphanumeric() || matches!(c, '_' | '-' | '$');
                    (!plain).then_some('\\').into_iter().chain([c])
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn sudo_command(program: &str, args: &[String]) -> String {
    let mut line = std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    if line.len() > MAX_SUDO_COMMAND {
        let mut end = MAX_SUDO_COMMAND;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: Caller = Caller {
        uid: 1000,
        gid: 1000,
    };

    fn request(argv: &[&str], preserve: Preserve) -> Request {
        Request {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            user: "root".into(),
            login: false,
            shell: false,
            preserve,
            set_env: vec![("SET".into(), "1".into())],
            cwd: "/home/user/p".into(),
            env: [
                ("FOO", "bar"),
                ("TERM", "xterm"),
                ("HOME", "/home/user"),
                ("PATH", "/evil"),
                ("SHELL", "/bin/sh"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        }
    }

    #[test]
    fn env_reset_keeps_a_few_and_sets_the_targets() {
        let cmd = command(
            &request(&["id", "-u"], Preserve::Reset),
            USER,
            "/safe",
            "/home/user",
        )
        .unwrap();
        assert_eq!((cmd.who, cmd.program.as_str()), (SandboxUser::Root, "id"));
        assert_eq!(
            (cmd.args, cmd.cwd.as_str()),
            (vec!["-u".to_string()], "/home/user/p")
        );
        let env = |k: &str| cmd.env.get(k).map(String::as_str);
        assert_eq!(env("FOO"), None, "a command's own variables stay its own");
        assert_eq!(env("TERM"), Some("xterm"));
        assert_eq!(env("HOME"), Some("/root"));
        assert_eq!(
            env("PATH"),
            Some("/safe"),
            "secure_path, never the caller's"
        );
        assert_eq!((env("USER"), env("LOGNAME")), (Some("root"), Some("root")));
        assert_eq!(
            (env("SUDO_USER"), env("SUDO_UID")),
            (Some("user"), Some("1000"))
        );
        assert_eq!(env("SUDO_COMMAND"), Some("id -u"));
        assert_eq!(env("SET"), Some("1"));
    }

    #[test]
    fn preserving_and_shells() {
        let cmd = command(
            &request(&["env"], Preserve::All),
            USER,
            "/safe",
            "/home/user",
        )
        .unwrap();
        assert_eq!(cmd.env["FOO"], "bar");
        assert_eq!(cmd.env["HOME"], "/home/user", "-E keeps HOME");
        assert_eq!(cmd.env["PATH"], "/safe");
        let only = Preserve::Only(vec!["FOO".into()]);
        assert_eq!(
            command(&request(&["env"], only), USER, "/s", "/h")
                .unwrap()
                .env["FOO"],
            "bar"
        );

        let mut req = request(&["echo", "a b", "$X;"], Preserve::Reset);
        req.login = true;
        let cmd = command(&req, USER, "/safe", "/home/user").unwrap();
        assert_eq!(cmd.program, "/bin/bash");
        assert_eq!(cmd.args, ["-l", "-c", "echo a\\ b $X\\;"]);
        assert_eq!(cmd.cwd, "/root");
        req.login = false;
        req.shell = true;
        req.argv.clear();
        let cmd = command(&req, USER, "/safe", "/home/user").unwrap();
        assert_eq!((cmd.program.as_str(), cmd.args.len()), ("/bin/sh", 0));
    }

    #[test]
    fn targets() {
        assert_eq!(target("root"), Ok(SandboxUser::Root));
        assert_eq!(target("#1000"), Ok(SandboxUser::User));
        assert_eq!(target("user"), Ok(SandboxUser::User));
        assert_eq!(target("nobody"), Err("sudo: unknown user nobody".into()));
        assert!(target("").is_err());
        let mut req = request(&["id"], Preserve::Reset);
        req.user = "user".into();
        let cmd = command(&req, USER, "/s", "/home/user").unwrap();
        assert_eq!(
            (cmd.who, cmd.env["HOME"].as_str()),
            (SandboxUser::User, "/home/user")
        );
    }
}
