# Python kernel driver of the local code interpreter.
#
# Protocol: the server writes one JSON object per line to stdin
#   {"op": "execute", "code": str, "env_vars": {str: str}, "count": int}
#   {"op": "interrupt"}
# and reads messages from stdout, each on its own line prefixed by MAGIC:
#   ready | stdout{text} | stderr{text} | result{data, main} |
#   error{name, value, traceback} | done
# plus a "mark" message on stderr when an execution ends. Anything else on
# stdout/stderr (output of child processes) is forwarded as raw output.
import ast
import asyncio
import base64
import builtins
import inspect
import json
import linecache
import os
import pprint
import queue
import signal
import sys
import threading
import traceback

MAGIC = "\x1eE2B\x1f"
CHUNK = 16384
_write_lock = threading.Lock()


def _send(fd, msg):
    data = (MAGIC + json.dumps(msg) + "\n").encode("utf-8", "surrogatepass")
    with _write_lock:
        while data:
            n = os.write(fd, data)
            data = data[n:]


def send(msg):
    _send(1, msg)


def send_message(msg):
    """A non-output message: pending output goes first."""
    flush_output()
    send(msg)


FLUSH_INTERVAL = 0.2
_buffer_lock = threading.RLock()


class _StreamWriter:
    """sys.stdout / sys.stderr replacement that streams protocol messages.

    Like ipykernel's OutStream, text is buffered and sent on flush(), every
    FLUSH_INTERVAL seconds, when it grows large, and before any other
    message, so chunks look like the real server's (print's text and its
    newline arrive together).
    """

    def __init__(self, kind):
        self._kind = kind
        self._parts = []
        self._size = 0
        self.other = None
        self.encoding = "utf-8"
        self.errors = "replace"

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        with _buffer_lock:
            if self.other is not None:
                self.other.flush()
            self._parts.append(text)
            self._size += len(text)
            if self._size >= CHUNK:
                self.flush()
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        with _buffer_lock:
            if not self._parts:
                return
            text = "".join(self._parts)
            self._parts = []
            self._size = 0
            for i in range(0, len(text), CHUNK):
                send({"type": self._kind, "text": text[i:i + CHUNK]})

    def isatty(self):
        return False

    def writable(self):
        return True

    def fileno(self):
        return 1 if self._kind == "stdout" else 2

    @property
    def buffer(self):
        return _BinaryWriter(self)


class _BinaryWriter:
    """sys.stdout.buffer: bytes written to it are streamed as UTF-8 text."""

    def __init__(self, text_writer):
        self._text = text_writer

    def write(self, data):
        self._text.write(bytes(data).decode("utf-8", "replace"))
        return len(data)

    def flush(self):
        self._text.flush()

    def writable(self):
        return True


def flush_output():
    with _buffer_lock:
        sys.__e2b_stdout__.flush()
        sys.__e2b_stderr__.flush()


def _flush_periodically():
    import time

    while True:
        time.sleep(FLUSH_INTERVAL)
        try:
            flush_output()
        except Exception:
            pass


_MIME_METHODS = [
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("application/pdf", "_repr_pdf_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"),
]


def _encode(mime, value):
    if isinstance(value, tuple) and len(value) == 2:
        value = value[0]  # (data, metadata)
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if mime == "application/json":
        try:
            json.dumps(value)
            return value
        except (TypeError, ValueError):
            return None
    return value if isinstance(value, str) else str(value)


class _JupyterPrinter(pprint.PrettyPrinter):
    """pprint without splitting strings: close to IPython's pretty printer."""

    _dispatch = dict(getattr(pprint.PrettyPrinter, "_dispatch", {}))

    def _pprint_whole(self, obj, stream, indent, allowance, context, level):
        stream.write(repr(obj))

    _dispatch[str.__repr__] = _pprint_whole
    _dispatch[bytes.__repr__] = _pprint_whole
    _dispatch[bytearray.__repr__] = _pprint_whole


def text_plain(obj):
    """Jupyter's text/plain: repr, with long built-in containers one item a line."""
    text = repr(obj)
    if len(text) > 79 and type(obj) in (list, tuple, dict, set, frozenset):
        try:
            return _JupyterPrinter(width=79, sort_dicts=False).pformat(obj)
        except Exception:
            pass
    return text


def mime_bundle(obj):
    """The MIME bundle Jupyter would show for obj (text/plain always present)."""
    bundle = {}
    method = getattr(obj, "_repr_mimebundle_", None)
    if callable(method) and not inspect.isclass(obj):
        try:
            got = method()
            if isinstance(got, tuple):
                got = got[0]
            if isinstance(got, dict):
                for mime, value in got.items():
                    value = _encode(mime, value)
                    if value is not None:
                        bundle[mime] = value
        except Exception:
            pass
    for mime, name in _MIME_METHODS:
        method = getattr(obj, name, None)
        if mime in bundle or not callable(method) or inspect.isclass(obj):
            continue
        try:
            value = _encode(mime, method())
        except Exception:
            value = None
        if value is not None:
            bundle[mime] = value
    if "text/plain" not in bundle:
        try:
            bundle["text/plain"] = text_plain(obj)
        except Exception as e:
            bundle["text/plain"] = "<repr failed: %s>" % type(e).__name__
    return bundle


def display(*objs, **_kwargs):
    """Jupyter's display(): shows each object as a (non-main) result."""
    for obj in objs:
        send_message({"type": "result", "data": mime_bundle(obj), "main": False})


def _flush_figures():
    """Shows open matplotlib figures as PNG displays (the inline backend's job)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        import io

        for num in plt.get_fignums():
            fig = plt.figure(num)
            buf = io.BytesIO()
            fig.savefig(buf, format="png", bbox_inches="tight")
            w, h = fig.get_size_inches() * fig.dpi
            send_message({
                "type": "result",
                "main": False,
                "data": {
                    "text/plain": "<Figure size %dx%d with %d Axes>" % (w, h, len(fig.axes)),
                    "image/png": base64.b64encode(buf.getvalue()).decode("ascii"),
                },
            })
        plt.close("all")
    except Exception as e:
        send({"type": "stderr", "text": "could not render figures: %r\n" % (e,)})


def run_shell(command):
    """IPython's `!command`: runs it with the shell, streaming its output."""
    import subprocess

    flush_output()
    proc = subprocess.Popen(command, shell=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        while True:
            chunk = proc.stdout.read1(CHUNK) if hasattr(proc.stdout, "read1") else proc.stdout.read(CHUNK)
            if not chunk:
                break
            sys.stdout.write(chunk.decode("utf-8", "replace"))
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        raise
    finally:
        proc.stdout.close()
        proc.wait()


class UsageError(Exception):
    """IPython's error for an unknown magic."""


def run_magic(line):
    """The few line magics code written for Jupyter commonly uses."""
    name, _, arg = line.partition(" ")
    arg = arg.strip()
    if name in ("pip", "conda") or name == "sx" or name == "system":
        command = arg if name in ("sx", "system") else "%s -m pip %s" % (sys.executable, arg)
        if name == "conda":
            command = "conda " + arg
        run_shell(command)
    elif name == "cd":
        os.chdir(os.path.expanduser(arg or "~"))
        print(os.getcwd())
    elif name == "pwd":
        return os.getcwd()
    elif name == "env":
        if "=" in arg:
            key, _, value = arg.partition("=")
            os.environ[key.strip()] = value.strip()
        elif arg:
            return os.environ.get(arg)
        else:
            return dict(os.environ)
    elif name in ("matplotlib", "load_ext", "config", "reload_ext", "autoreload"):
        return None
    else:
        raise UsageError("Line magic function `%%%s` not found." % name)


def transform_ipython_lines(code):
    """Rewrites statement lines `!cmd` and `%magic args` into calls."""
    out = []
    for line in code.splitlines():
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith("!"):
            line = "%s__e2b_run_shell__(%r)" % (indent, stripped[1:])
        elif stripped.startswith("%") and not stripped.startswith("%%") and len(stripped) > 1 and stripped[1].isalpha():
            line = "%s__e2b_run_magic__(%r)" % (indent, stripped[1:])
        out.append(line)
    return "\n".join(out)


class _IPythonDisplayPatcher:
    """With a real IPython installed but no IPython shell, its display()
    only prints; this import hook points it at our display() instead."""

    MODULES = ("IPython.core.display_functions", "IPython.display")

    def find_spec(self, name, path=None, target=None):
        if name not in self.MODULES:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        original = spec.loader.exec_module

        def exec_module(module):
            original(module)
            if hasattr(module, "display"):
                module.display = display

        spec.loader.exec_module = exec_module
        return spec


def install_ipython_display_shim():
    """A minimal `IPython.display` when IPython is not installed, so code
    written for notebooks (`from IPython.display import display, HTML`) runs."""
    import importlib.util
    import types

    try:
        if importlib.util.find_spec("IPython") is not None:
            sys.meta_path.insert(0, _IPythonDisplayPatcher())
            return
    except (ImportError, ValueError):
        return

    class _Data:
        _mime = None

        def __init__(self, data=None, url=None, filename=None, **_kwargs):
            if filename is not None:
                with open(filename, "rb" if self._binary else "r") as f:
                    data = f.read()
            self.data = data
            self.url = url
            self.filename = filename

        _binary = False

        def __repr__(self):
            return "<IPython.core.display.%s object>" % type(self).__name__

    def _make(name, method, binary=False):
        cls = type(name, (_Data,), {"_binary": binary})
        setattr(cls, method, lambda self: self.data)
        return cls

    HTML = _make("HTML", "_repr_html_")
    Markdown = _make("Markdown", "_repr_markdown_")
    SVG = _make("SVG", "_repr_svg_")
    Latex = _make("Latex", "_repr_latex_")
    Javascript = _make("Javascript", "_repr_javascript_")

    class JSON(_Data):
        def _repr_json_(self):
            return self.data

    class Image(_Data):
        _binary = True

        def __init__(self, data=None, url=None, filename=None, format=None, **kwargs):
            if isinstance(data, str) and filename is None and url is None:
                filename, data = data, None
            super().__init__(data, url, filename, **kwargs)
            name = (filename or url or "").lower()
            self.format = (format or ("jpeg" if name.endswith((".jpg", ".jpeg")) else "png")).lower()

        def _repr_png_(self):
            return self.data if self.format == "png" else None

        def _repr_jpeg_(self):
            return self.data if self.format in ("jpeg", "jpg") else None

    def clear_output(wait=False):
        pass

    ipython = types.ModuleType("IPython")
    ipython.__path__ = []
    module = types.ModuleType("IPython.display")
    for name, value in dict(display=display, HTML=HTML, Markdown=Markdown, SVG=SVG, Latex=Latex,
                            Javascript=Javascript, JSON=JSON, Image=Image,
                            clear_output=clear_output).items():
        setattr(module, name, value)
    ipython.display = module
    ipython.get_ipython = lambda: None
    # matplotlib reads it once an IPython module is loaded (IPython before
    # 8.24 needs a GUI fix-up); as recent as E2B's image, so nothing is done.
    ipython.version_info = (9, 0, 0, "")
    sys.modules["IPython"] = ipython
    sys.modules["IPython.display"] = module


class Kernel:
    def __init__(self):
        self.namespace = {"__name__": "__main__", "__builtins__": builtins}
        self.loop = asyncio.new_event_loop()
        self.running_user_code = False
        self.requests = queue.Queue()
        self.main_thread = threading.main_thread().ident

    # -- stdin reader (a thread, so interrupts arrive while code runs) --
    def read_requests(self, stream):
        for line in stream:
            try:
                req = json.loads(line)
            except ValueError:
                continue
            if req.get("op") == "interrupt":
                if self.running_user_code:
                    signal.pthread_kill(self.main_thread, signal.SIGINT)
            else:
                self.requests.put(req)
        self.requests.put(None)

    def on_sigint(self, _signum, _frame):
        # Only user code is interrupted; the driver's own bookkeeping never is.
        if self.running_user_code:
            raise KeyboardInterrupt()

    # -- execution --
    def run_user(self, code_obj):
        self.running_user_code = True
        try:
            value = eval(code_obj, self.namespace)
            if inspect.iscoroutine(value):
                value = self.loop.run_until_complete(value)
            return value
        finally:
            self.running_user_code = False

    def execute(self, code, count):
        filename = "<cell-%d>" % count
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            tree = ast.parse(code, filename, "exec")
        except (SyntaxError, ValueError) as e:
            # Not Python: maybe IPython's `!cmd` / `%magic` lines.
            try:
                tree = ast.parse(transform_ipython_lines(code), filename, "exec")
            except (SyntaxError, ValueError):
                self.send_error(e, count)
                return
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
        try:
            self.run_user(compile(tree, filename, "exec", flags=flags))
            if last is not None:
                value = self.run_user(compile(last, filename, "eval", flags=flags))
                if value is not None:
                    self.namespace["_"] = value
                    send_message({"type": "result", "data": mime_bundle(value), "main": True})
        except BaseException as e:  # includes KeyboardInterrupt and SystemExit
            self.send_error(e, count)

    def send_error(self, exc, count):
        name = type(exc).__name__
        value = str(exc)
        try:
            tb = self.format_traceback(exc, count)
        except Exception:
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        send_message({"type": "error", "name": name, "value": value, "traceback": tb})

    def format_traceback(self, exc, count):
        """An IPython-like traceback without the driver's own frames."""
        name = type(exc).__name__
        lines = ["-" * 75, "%-42sTraceback (most recent call last)" % name]
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if f.filename != "<string>" and not f.filename.endswith("asyncio/base_events.py")]
        if isinstance(exc, SyntaxError):
            frames = []  # only the driver's parse call
        for f in frames:
            if f.filename.startswith("<cell-"):
                cell = f.filename[len("<cell-"):-1]
                lines.append("Cell In[%s], line %d" % (cell, f.lineno))
                src = linecache.getlines(f.filename)
                lo = max(1, f.lineno - 2)
                for n in range(lo, min(len(src), f.lineno + 2) + 1):
                    marker = "---> " if n == f.lineno else "     "
                    lines.append("%s%d %s" % (marker, n, src[n - 1].rstrip("\n")))
            else:
                lines.append("File %s:%d, in %s" % (f.filename, f.lineno, f.name))
                if f.line:
                    lines.append("---> %d %s" % (f.lineno, f.line))
            lines.append("")
        lines.extend(l.rstrip("\n") for l in traceback.format_exception_only(type(exc), exc))
        return "\n".join(lines)

    def handle(self, req):
        env_vars = req.get("env_vars") or {}
        saved = {k: os.environ.get(k) for k in env_vars}
        try:
            for k, v in env_vars.items():
                os.environ[str(k)] = str(v)
            self.execute(req.get("code", ""), int(req.get("count", 0)))
            _flush_figures()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def serve(self):
        while True:
            try:
                req = self.requests.get()
            except KeyboardInterrupt:
                continue
            if req is None:
                return
            try:
                self.handle(req)
            except BaseException as e:
                send({"type": "stderr", "text": "kernel error: %r\n" % (e,)})
            send_message({"type": "done"})
            _send(2, {"type": "mark"})


def main():
    if len(sys.argv) > 1:
        try:
            os.chdir(sys.argv[1])
        except OSError as e:
            sys.stderr.write("cannot enter %s: %s\n" % (sys.argv[1], e))
    sys.argv = [""]
    sys.path.insert(0, "")
    os.environ.setdefault("MPLBACKEND", "Agg")
    # Keep the protocol pipe to ourselves: child processes get /dev/null as stdin.
    requests_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = open(os.devnull, "r")
    sys.stdout = sys.__e2b_stdout__ = _StreamWriter("stdout")
    sys.stderr = sys.__e2b_stderr__ = _StreamWriter("stderr")
    sys.stdout.other = sys.stderr
    sys.stderr.other = sys.stdout
    threading.Thread(target=_flush_periodically, daemon=True).start()
    builtins.display = display
    builtins.__e2b_run_shell__ = run_shell
    builtins.__e2b_run_magic__ = run_magic
    install_ipython_display_shim()
    import warnings

    warnings.filterwarnings("ignore", message=".*non-interactive.*")
    kernel = Kernel()
    signal.signal(signal.SIGINT, kernel.on_sigint)
    threading.Thread(target=kernel.read_requests, args=(requests_in,), daemon=True).start()
    send({"type": "ready"})
    kernel.serve()


main()
