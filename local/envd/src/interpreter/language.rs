//! Kernel languages: the names clients send and how each kernel is launched.

/// The bridge to a real Jupyter kernel (ipykernel through jupyter_client),
/// for a Python that has them (the `code-interpreter-v1` template's).
const JUPYTER_BRIDGE: &str = include_str!("jupyter_bridge.py");
/// The fallback Python driver, for a Python without Jupyter (the `base`
/// template's, the host's): IPython's behaviour imitated, documented as such.
const PYTHON_DRIVER: &str = include_str!("python_kernel.py");
/// Run with `python3 -u -c SELECT CWD KERNEL LANGUAGE BRIDGE [FALLBACK]`:
/// runs the bridge to the Jupyter kernel `KERNEL` where the sandbox's
/// Python has Jupyter (and, for Python's own kernel, ipykernel), else the
/// fallback driver if there is one (Python source, or for bash a bash
/// script, then exec'd as `bash -c`), else the bridge all the same, which
/// then says what is missing.
const PYTHON_SELECT: &str = "import importlib.util as u, os, sys\n\
    cwd, kernel, language, bridge = sys.argv[1:5]\n\
    fallback = sys.argv[5] if len(sys.argv) > 5 else None\n\
    need = ('jupyter_client', 'ipykernel') if kernel == 'python3' else ('jupyter_client',)\n\
    if fallback is not None and not all(u.find_spec(m) for m in need):\n\
    \x20   if language == 'bash':\n\
    \x20       os.execvp('bash', ['bash', '--noprofile', '--norc', '-c', fallback, 'e2b-kernel', cwd])\n\
    \x20   source, sys.argv[1:] = fallback, [cwd]\n\
    else:\n\
    \x20   source, sys.argv[1:] = bridge, [cwd, kernel, language]\n\
    exec(compile(source, '<e2b-kernel>', 'exec'))\n";
/// The bash driver, run with `bash -c`.
const BASH_DRIVER: &str = include_str!("bash_kernel.sh");
/// The Node driver, run with `node -e`.
const JAVASCRIPT_DRIVER: &str = include_str!("javascript_kernel.js");

/// A language this interpreter has a kernel for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Language {
    /// IPython's kernel through `jupyter_bridge.py`, or CPython through
    /// `python_kernel.py` where there is no Jupyter.
    Python,
    /// Node through `javascript_kernel.js`.
    JavaScript,
    /// TypeScript: Deno's kernel through `jupyter_bridge.py`.
    TypeScript,
    /// R: IRkernel through `jupyter_bridge.py`.
    R,
    /// Java: JJava (the maintained fork of IJava, E2B's) through
    /// `jupyter_bridge.py`.
    Java,
    /// Bash: bash_kernel through `jupyter_bridge.py`, or a persistent
    /// `bash` through `bash_kernel.sh` where there is no Jupyter.
    Bash,
}

/// The languages this server has kernels for.
pub const AVAILABLE: [&str; 6] = e2b_wire::interpreter::LOCAL_LANGUAGES;

impl Language {
    /// Parses a client-given name the way the real server normalises it
    /// (trim, lower-case, `js`/`ts` aliases). A language this server has no
    /// kernel for is an error whose text is sent as the 400 answer.
    pub(crate) fn parse(raw: &str) -> Result<Language, String> {
        let name = raw.trim().to_lowercase();
        match name.as_str() {
            "python" => Ok(Language::Python),
            "javascript" | "js" => Ok(Language::JavaScript),
            "typescript" | "ts" => Ok(Language::TypeScript),
            "r" => Ok(Language::R),
            "java" => Ok(Language::Java),
            "bash" => Ok(Language::Bash),
            other => Err(format!(
                "language '{other}' is not available on this backend: the local server runs {}",
                AVAILABLE.join(", ")
            )),
        }
    }

    /// The name contexts report.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::R => "r",
            Language::Java => "java",
            Language::Bash => "bash",
        }
    }

    /// Program and arguments that start this kernel with working directory `cwd`.
    pub(crate) fn launch(self, cwd: &str) -> (&'static str, Vec<String>) {
        let (kernelspec, fallback) = match self {
            Language::JavaScript => {
                // --expose-internals gives the driver Node's REPL rewriter
                // for top-level await and its parser for `import`s.
                let args = ["--expose-internals", "-e", JAVASCRIPT_DRIVER, cwd];
                return ("node", args.map(String::from).to_vec());
            }
            Language::Python => ("python3", Some(PYTHON_DRIVER)),
            Language::TypeScript => ("deno", None),
            Language::R => ("ir", None),
            Language::Java => ("java", None),
            Language::Bash => ("bash", Some(BASH_DRIVER)),
        };
        let mut args: Vec<String> = [
            "-u",
            "-c",
            PYTHON_SELECT,
            cwd,
            kernelspec,
            self.name(),
            JUPYTER_BRIDGE,
        ]
        .map(String::from)
        .to_vec();
        args.extend(fallback.map(String::from));
        ("python3", args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_like_the_real_server() {
        assert_eq!(Language::parse(" Python "), Ok(Language::Python));
        assert_eq!(Language::parse("JS"), Ok(Language::JavaScript));
        assert_eq!(Language::parse("javascript"), Ok(Language::JavaScript));
        assert_eq!(Language::parse("bash"), Ok(Language::Bash));
        assert_eq!(Language::parse("TS"), Ok(Language::TypeScript));
        assert_eq!(Language::parse("Java"), Ok(Language::Java));
        assert!(Language::parse("cobol").unwrap_err().contains("cobol"));
    }
}
