# Jupyter bridge of the local code interpreter: runs a real Jupyter kernel
# (ipykernel, started and spoken to by jupyter_client) and translates its
# messages into the driver protocol envd reads, the way E2B's own
# code-interpreter server translates them into /execute lines
# (template/server/messaging.py in e2b-dev/code-interpreter).
#
# Run as `python3 -u -c BRIDGE CWD [KERNEL-NAME [LANGUAGE]]` (default
# python3, python): KERNEL-NAME is a Jupyter kernelspec (IRkernel's is
# `ir`, JJava's `java`), LANGUAGE says how an execution's env vars are set
# in it.
#
# Protocol with envd (as python_kernel.py's): one JSON request a line on stdin
#   {"op": "execute", "code": str, "env_vars": {str: str}, "count": int}
#   {"op": "interrupt"}
# and one message a line on stdout, prefixed by MAGIC:
#   ready{jupyter} | count{execution_count} | stdout{text} | stderr{text} |
#   result{data, main} | error{name, value, traceback} | done
# plus a "mark" on stderr when an execution ends.
#
# The kernel is the template's: its formatters (E2B's e2b/data, e2b/chart,
# JSON and image displays) come from the IPython configuration the template
# installs in <venv>/etc/ipython, as E2B's image installs them.
import ctypes
import json
import os
import queue
import shlex
import signal
import sys
import threading
import uuid

try:
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import NoSuchKernel
    from jupyter_core.paths import jupyter_runtime_dir
except ImportError:
    sys.stderr.write(
        "this sandbox's Python has no Jupyter: the kernel needs the "
        "code-interpreter-v1 template\n"
    )
    sys.exit(1)

# What to install when a kernel is missing.
MISSING = {
    "ir": "R's kernel (IRkernel) is not installed on this machine: scripts/bootstrap "
          "installs it (Debian's r-cran-irkernel)",
    "deno": "TypeScript's kernel (Deno) is not in this template: scripts/bootstrap "
            "installs it in code-interpreter-v1",
    "java": "Java's kernel (JJava) is not in this template: scripts/bootstrap "
            "installs it in code-interpreter-v1, and a JDK (Debian's default-jdk-headless)",
}

# prctl(PR_SET_PDEATHSIG, SIGKILL), resolved before any fork: jupyter_client
# starts the kernel in a session of its own, which envd's kill of this
# bridge's process group (a context removed, restarted or given up) does
# not reach, and only some kernels (ipykernel) watch for their parent's end.
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl
_PR_SET_PDEATHSIG = 1


def die_with_bridge():
    """Runs in the kernel's process before exec: the kernel is killed when
    this bridge ends (the setting survives exec)."""
    _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


MAGIC = "\x1eE2B\x1f"
# Most characters of output in one message.
CHUNK = 16384
# How long a kernel may take to answer its first request.
START_TIMEOUT = 30
# How often a running execution checks that its kernel is alive.
POLL = 0.5
# How long after its idle an execution's reply may come.
REPLY_WAIT = 5
_write_lock = threading.Lock()


def _send(fd, msg):
    data = (MAGIC + json.dumps(msg) + "\n").encode("utf-8", "surrogatepass")
    with _write_lock:
        while data:
            n = os.write(fd, data)
            data = data[n:]


def send(msg):
    _send(1, msg)


def python_env(env_vars):
    """Sets an execution's env vars in a Python kernel, keeping what they
    replace for python_restore."""
    return (
        "__import__('builtins').__e2b_saved_env__ = "
        "(lambda o, e: ({k: o.get(k) for k in e}, o.update(e))[0])"
        "(__import__('os').environ, %r)" % (dict(env_vars),)
    )


PYTHON_RESTORE = (
    "(lambda o, s: [o.pop(k, None) if v is None else o.__setitem__(k, v) "
    "for k, v in s.items()])"
    "(__import__('os').environ, "
    "__import__('builtins').__dict__.pop('__e2b_saved_env__', {}))"
)


def string_literal(text):
    """`text` as an R or Java string literal: a JSON string with ASCII
    escapes is both. In Java it never holds a \\u escape that Java would
    read before the literal (a quote or a line break is escaped the short
    way, a backslash doubled), so a value stays data."""
    return json.dumps(text, ensure_ascii=True)


def r_env(env_vars):
    """The same in R: the replaced values kept in a hidden variable."""
    keys = ", ".join(string_literal(k) for k in env_vars)
    pairs = ", ".join("%s = %s" % (string_literal(k), string_literal(v)) for k, v in env_vars.items())
    return (
        ".e2b_saved_env <- Sys.getenv(c(%s), unset = NA, names = TRUE); "
        "do.call(Sys.setenv, list(%s))" % (keys, pairs)
    )


R_RESTORE = (
    "local({ for (k in names(.e2b_saved_env)) { v <- .e2b_saved_env[[k]]; "
    "if (is.na(v)) Sys.unsetenv(k) else do.call(Sys.setenv, setNames(list(v), k)) } }); "
    "rm(.e2b_saved_env)"
)

def typescript_env(env_vars):
    """The same in TypeScript (Deno's process.env)."""
    return (
        "(globalThis as any).__e2b_saved_env__ = Object.fromEntries("
        "Object.keys(%s).map((k) => [k, process.env[k]])); Object.assign(process.env, %s);"
        % (json.dumps(env_vars), json.dumps(env_vars))
    )


TYPESCRIPT_RESTORE = (
    "for (const [k, v] of Object.entries((globalThis as any).__e2b_saved_env__ ?? {})) "
    "{ if (v === undefined) delete process.env[k]; else process.env[k] = v as string; } "
    "delete (globalThis as any).__e2b_saved_env__;"
)

def java_env(env_vars):
    """The same in Java: env vars are system properties, as on E2B
    (System.getProperty); setProperty's answer is the value it replaced."""
    sets = " ".join(
        "__e2bSavedEnv.put(%s, System.setProperty(%s, %s));"
        % (string_literal(k), string_literal(k), string_literal(v)) for k, v in env_vars.items()
    )
    return "var __e2bSavedEnv = new java.util.HashMap<String, String>(); " + sets


JAVA_RESTORE = (
    "__e2bSavedEnv.forEach((k, v) -> { if (v == null) System.clearProperty(k); "
    "else System.setProperty(k, v); });"
)
# Run once on a Java kernel's start: the sandbox's env vars become system
# properties too, as E2B's server sets its global env vars in every kernel
# (its Java's only way to read them with System.getProperty).
JAVA_START = "System.getenv().forEach((k, v) -> System.getProperties().putIfAbsent(k, v));"


def bash_names(env_vars):
    # Names that cannot be shell variables are left out.
    return [k for k in env_vars if k.isascii() and k.isidentifier()]


def bash_env(env_vars):
    """The same in bash: the replaced values kept in an associative array."""
    names = bash_names(env_vars)
    if not names:
        return "true"
    keep = " ".join('[[ -v %s ]] && __e2b_saved_env[%s]="$%s";' % (k, k, k) for k in names)
    sets = " ".join("%s=%s" % (k, shlex.quote(env_vars[k])) for k in names)
    return "declare -gA __e2b_saved_env=(); %s export %s" % (keep, sets)


def bash_restore(env_vars):
    back = " ".join(
        '[[ -v __e2b_saved_env[%s] ]] && export %s="${__e2b_saved_env[%s]}" || unset %s;'
        % (k, k, k, k) for k in bash_names(env_vars)
    )
    return "%s unset __e2b_saved_env" % back


# Per language: code that sets an execution's env vars, and code that
# puts back what they replaced (as E2B's server runs around an execution),
# each made from the execution's env vars.
ENV_CODE = {
    "python": (python_env, lambda _: PYTHON_RESTORE),
    "r": (r_env, lambda _: R_RESTORE),
    "typescript": (typescript_env, lambda _: TYPESCRIPT_RESTORE),
    "java": (java_env, lambda _: JAVA_RESTORE),
    "bash": (bash_env, bash_restore),
}
# Per language: code run quietly each time its kernel starts.
START_CODE = {"java": JAVA_START}


class Bridge:
    def __init__(self, cwd, kernel_name, language):
        self.cwd = cwd
        self.kernel_name = kernel_name
        self.env_code = ENV_CODE.get(language)
        self.start_code = START_CODE.get(language)
        # Whether the kernel may publish a cell's output after its idle.
        self.late_output = kernel_name == "deno"
        self.requests = queue.Queue()
        self.km = None
        self.kc = None
        # The kernel's control channel as the request thread's own socket
        # (zmq sockets are not shared between threads), with its kernel.
        self.control = None
        # Whether the execution under way has reported its error.
        self.errored = False

    # -- the kernel --
    def start_kernel(self):
        self.km = KernelManager(kernel_name=self.kernel_name)
        # Where Jupyter keeps them (not a temporary file in /tmp, the
        # default, where the sandbox's user would find it).
        runtime = jupyter_runtime_dir()
        os.makedirs(runtime, mode=0o700, exist_ok=True)
        self.km.connection_file = os.path.join(runtime, "kernel-%s.json" % uuid.uuid4())
        env = dict(os.environ)
        # ipykernel's debugger warns about frozen modules on every start.
        env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        env.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
        self.km.start_kernel(
            cwd=self.cwd,
            env=env,
            stdout=subprocess_devnull(),
            stderr=subprocess_devnull(),
            preexec_fn=die_with_bridge,
        )
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=START_TIMEOUT)
        if self.start_code:
            self.run_quietly(self.start_code)

    def restart_kernel(self):
        try:
            self.kc.stop_channels()
        except Exception:
            pass
        try:
            self.km.shutdown_kernel(now=True)
        except Exception:
            pass
        self.start_kernel()

    def kernel_alive(self):
        try:
            return self.km.is_alive()
        except Exception:
            return False

    def interrupt(self):
        """SIGINT for the kernel's process group (its own session), as
        jupyter_client does, without touching its event loop from this
        thread; or, for a kernel that asks for it (JJava: a SIGINT would end
        the JVM), an interrupt_request on its control channel."""
        km = self.km
        if km is not None and km.kernel_spec.interrupt_mode == "message":
            try:
                if self.control is None or self.control[0] is not km:
                    if self.control is not None:
                        self.control[1].close(linger=0)
                    self.control = (km, km.connect_control())
                km.session.send(self.control[1], "interrupt_request", {})
            except Exception:
                pass
            return
        provisioner = getattr(self.km, "provisioner", None)
        pgid = getattr(provisioner, "pgid", None)
        pid = getattr(provisioner, "pid", None)
        try:
            if pgid:
                os.killpg(pgid, signal.SIGINT)
            elif pid:
                os.kill(pid, signal.SIGINT)
        except OSError:
            pass

    # -- requests --
    def read_requests(self, stream):
        for line in stream:
            try:
                req = json.loads(line)
            except ValueError:
                continue
            if req.get("op") == "interrupt":
                self.interrupt()
            else:
                self.requests.put(req)
        self.requests.put(None)

    def run_quietly(self, code):
        """A silent execution (env vars in and out): its output is dropped."""
        msg_id = self.kc.execute(code, silent=True, store_history=False, allow_stdin=False)
        if self.follow(msg_id, quiet=True):
            self.take_reply(msg_id)

    def take_reply(self, msg_id):
        """The shell channel's reply to `msg_id` (earlier ones it passes are
        dropped, so none piles up), or None if none came."""
        while True:
            try:
                msg = self.kc.get_shell_msg(timeout=REPLY_WAIT)
            except queue.Empty:
                return None
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return msg.get("content", {})

    def execute(self, req):
        env_vars = {str(k): str(v) for k, v in (req.get("env_vars") or {}).items()}
        if not self.env_code:
            env_vars = {}
        if env_vars:
            self.run_quietly(self.env_code[0](env_vars))
        msg_id = self.kc.execute(
            req.get("code", ""), silent=False, store_history=True,
            allow_stdin=False, stop_on_error=True,
        )
        alive = self.follow(msg_id, quiet=False)
        if alive:
            # As E2B's server: a failure the kernel gives only in its reply
            # (bash_kernel's exit status) is the execution's error too.
            reply = self.take_reply(msg_id) or {}
            if reply.get("status") == "error" and not self.errored:
                self.errored = True
                send({"type": "error", "name": reply.get("ename", ""),
                      "value": reply.get("evalue", ""),
                      "traceback": "".join(reply.get("traceback") or [])})
            elif reply.get("status") == "abort":
                send({"type": "error", "name": "ExecutionAborted",
                      "value": "Execution was aborted", "traceback": ""})
        if alive and self.late_output:
            # Deno forwards a cell's output from a task of its own, which
            # may publish it after the cell's idle: an empty execution's
            # idle comes after it.
            flush = self.kc.execute("", silent=True, store_history=False, allow_stdin=False)
            alive = self.follow(flush, quiet=False, late=msg_id)
            if alive:
                self.take_reply(flush)
        if alive and env_vars:
            self.run_quietly(self.env_code[1](env_vars))

    def follow(self, msg_id, quiet, late=None):
        """Forwards the execution's messages until its kernel is idle again
        (with those of `late`, an execution that ended before it, whose
        output may still come). False when the kernel died meanwhile (it is
        restarted, without its state, and the execution ends with E2B's
        ContextRestarting)."""
        if late is None:
            self.errored = False
        started = False
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=POLL)
            except queue.Empty:
                if not self.kernel_alive():
                    if not quiet:
                        send({"type": "error", "name": "ContextRestarting",
                              "value": "Context was restarted", "traceback": ""})
                    self.restart_kernel()
                    return False
                continue
            parent = msg.get("parent_header", {}).get("msg_id")
            kind = msg["msg_type"]
            content = msg["content"]
            if late is not None and parent == late and kind in ("stream", "display_data", "execute_result"):
                pass  # the earlier execution's, forwarded below
            elif parent != msg_id:
                continue
            elif late is not None and kind != "status":
                continue  # the empty execution's own
            if kind == "status":
                if content.get("execution_state") == "busy":
                    started = True
                elif content.get("execution_state") == "idle" and started:
                    return True
            elif quiet:
                continue
            elif kind == "execute_input":
                send({"type": "count", "execution_count": content.get("execution_count")})
            elif kind == "stream":
                # ipykernel sends whatever was written between its flushes
                # as one message: passed on in pieces, each a short line.
                name = "stderr" if content.get("name") == "stderr" else "stdout"
                text = content.get("text", "")
                for i in range(0, len(text), CHUNK):
                    send({"type": name, "text": text[i:i + CHUNK]})
            elif kind in ("display_data", "execute_result"):
                send({"type": "result", "data": dict(content.get("data") or {}),
                      "main": kind == "execute_result"})
            elif kind == "error" and not self.errored:
                self.errored = True
                send({"type": "error", "name": content.get("ename", ""),
                      "value": content.get("evalue", ""),
                      "traceback": "".join(content.get("traceback") or [])})

    def serve(self):
        while True:
            req = self.requests.get()
            if req is None:
                return
            try:
                self.execute(req)
            except Exception as e:
                send({"type": "stderr", "text": "kernel error: %r\n" % (e,)})
            send({"type": "done"})
            _send(2, {"type": "mark"})

    def close(self):
        try:
            self.kc.stop_channels()
            self.km.shutdown_kernel(now=True)
        except Exception:
            pass


def subprocess_devnull():
    import subprocess

    return subprocess.DEVNULL


def main():
    args = sys.argv[1:]
    cwd = args[0] if args else os.getcwd()
    kernel_name = args[1] if len(args) > 1 else "python3"
    language = args[2] if len(args) > 2 else "python"
    # The protocol pipe is this bridge's alone: the kernel gets /dev/null.
    requests_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    # An interrupt meant for the kernel never stops the bridge (a handler,
    # not SIG_IGN, which the kernel would inherit).
    signal.signal(signal.SIGINT, lambda _signum, _frame: None)
    bridge = Bridge(cwd, kernel_name, language)
    try:
        bridge.start_kernel()
    except NoSuchKernel:
        sys.stderr.write(MISSING.get(kernel_name, "no Jupyter kernel %r here" % kernel_name) + "\n")
        sys.exit(1)
    except Exception as e:
        hint = ""
        if "died" in str(e):
            # What a kernel killed by the sandbox's memory limit looks like.
            hint = (" (if the sandbox is short of memory: each kernel takes 60 to 220 MiB; "
                    "remove the contexts no longer needed)")
        sys.stderr.write("the Jupyter kernel did not start: %s%s\n" % (e, hint))
        sys.exit(1)
    threading.Thread(target=bridge.read_requests, args=(requests_in,), daemon=True).start()
    send({"type": "ready", "jupyter": True})
    try:
        bridge.serve()
    finally:
        bridge.close()


main()
