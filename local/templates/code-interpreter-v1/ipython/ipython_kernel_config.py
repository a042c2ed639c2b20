# The code-interpreter-v1 template's kernel configuration, installed by
# scripts/bootstrap in <venv>/etc/ipython, where every IPython kernel the
# venv's python starts reads it. As on E2B's image: plain tracebacks (no
# ANSI colours), long sequences printed whole, and the startup scripts
# that add E2B's display formats.
import os
import sys

c = get_config()  # noqa: F821 (given by IPython's config loader)

c.InteractiveShell.colors = "NoColor"
c.PlainTextFormatter.max_seq_length = 0

_startup = os.path.join(sys.prefix, "etc", "ipython", "startup")
c.InteractiveShellApp.exec_files = [
    os.path.join(_startup, name) for name in sorted(os.listdir(_startup)) if name.endswith(".py")
]
