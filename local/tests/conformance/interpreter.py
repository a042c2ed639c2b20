"""The code interpreter is the real one, through the official
e2b-code-interpreter SDK: the behaviours E2B's own SDK tests check that
only a real IPython kernel with E2B's formatters gives. The default Python
and JavaScript contexts exist from the sandbox's start; an indented cell
runs; a DataFrame has its `data`, a matplotlib figure its `chart`; a raw
LaTeX display is `latex`; a PIL image saved to a path is displayed; every
list and dict result has its `json`; an execution's env vars are its own;
a context made in `/root` works there (the kernel is the sandbox's root, as
E2B's Jupyter is); a kernel killed from inside is restarted and says so;
an interrupted execution leaves its context serving; R runs in IRkernel,
TypeScript in Deno's kernel, Java in JJava (env vars as system
properties, as on E2B), bash in bash_kernel.
Prints one `ok:` line a
step, then `interpreter scenario passed`.
"""

import time

from e2b_code_interpreter import Sandbox

made = []


def step(name: str) -> None:
    print(f"ok: {name}", flush=True)


sbx = Sandbox.create(timeout=120)
made.append(sbx)
try:
    languages = [c.language for c in sbx.list_code_contexts()]
    assert languages == ["python", "javascript"], languages
    step("a fresh sandbox lists its default python and javascript contexts")

    ex = sbx.run_code("  x = 41\n  print('indented')\n  x + 1")
    assert ex.error is None, ex.error
    assert ex.logs.stdout == ["indented\n"], ex.logs
    assert ex.text == "42", ex.text
    step("an indented cell runs (IPython dedents it)")

    ex = sbx.run_code(
        "import pandas as pd\n"
        "pd.DataFrame({'a': [1, 2], 'when': pd.to_datetime(['2024-01-01', '2024-01-02'])})"
    )
    assert ex.error is None, ex.error
    frame = ex.results[0]
    assert frame.data == {"a": [1, 2], "when": ["2024-01-01T00:00:00", "2024-01-02T00:00:00"]}, frame.data
    assert frame.html and "<table" in frame.html, frame.html
    step("a DataFrame has its data (E2B's e2b/data formatter) and html")

    ex = sbx.run_code(
        "import matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3], [4, 5, 6])\n"
        "plt.title('growth')\n"
        "plt.show()"
    )
    assert ex.error is None, ex.error
    [figure] = ex.results
    assert figure.png, figure.formats()
    assert figure.chart is not None and figure.chart.type.value == "line", figure.chart
    assert figure.chart.title == "growth", figure.chart.title
    step("a matplotlib figure has its png and its chart (e2b-charts)")

    ex = sbx.run_code(
        "from IPython.display import display\n"
        "display({'text/latex': r'\\frac{1}{2}'}, raw=True)"
    )
    assert [r.latex for r in ex.results] == ["\\frac{1}{2}"], ex.results
    step("a raw LaTeX display is a latex result")

    ex = sbx.run_code("from PIL import Image\nImage.new('RGB', (8, 8), 'red').save('/tmp/red.png')")
    assert ex.error is None, ex.error
    assert len(ex.results) == 1 and ex.results[0].png, ex.results
    step("a PIL image saved to a path is displayed once")

    ex = sbx.run_code("{'n': 1, 'items': [1, 2]}")
    assert ex.results[0].json == {"n": 1, "items": [1, 2]}, ex.results[0].json
    step("a dict result has its json")

    ex = sbx.run_code("import os\nos.environ.get('E2B_STEP'), os.getcwd()", envs={"E2B_STEP": "mine"})
    assert ex.text == "('mine', '/home/user')", ex.text
    ex = sbx.run_code("os.environ.get('E2B_STEP')")
    assert ex.text is None, ex.text
    step("an execution's env vars are its own; the default cwd is /home/user")

    ex = sbx.run_code("\n    import { readFileSync } from 'fs'\n    console.log(typeof readFileSync)\n    ", language="js")
    assert ex.logs.stdout == ["function\n"], (ex.logs, ex.error)
    step("a JavaScript cell takes import statements")

    ex = sbx.run_code("echo $E2B_STEP; pwd; echo to-stderr >&2; false", language="bash", envs={"E2B_STEP": "bash-mine"})
    assert ex.logs.stdout == ["bash-mine\n", "/home/user\n", "to-stderr\n"], ex.logs
    assert ex.error is not None and (ex.error.name, ex.error.value) == ("", "1"), ex.error
    ex = sbx.run_code("echo ${E2B_STEP:-gone}", language="bash")
    assert ex.logs.stdout == ["gone\n"], ex.logs
    step("bash runs in bash_kernel: its output one terminal, a failure its exit status")

    counts = [sbx.run_code("1").execution_count for _ in range(2)]
    assert counts[1] == counts[0] + 1, counts
    step("executions are numbered by the kernel")

    root = sbx.create_code_context(language="python", cwd="/root")
    ex = sbx.run_code("import os\nos.getcwd(), os.getuid()", context=root)
    assert ex.text == "('/root', 0)", (ex.text, ex.error)
    assert sbx.list_code_contexts()[-1].cwd == "/root"
    step("a context made in /root runs there, as the sandbox's root")

    ex = sbx.run_code("y = 7\nimport os\nos.kill(os.getpid(), 9)", context=root)
    assert ex.error is not None and ex.error.name == "ContextRestarting", ex.error
    ex = sbx.run_code("y", context=root)
    assert ex.error is not None and ex.error.name == "NameError", ex.error
    ex = sbx.run_code("2 + 2", context=root)
    assert ex.text == "4", (ex.text, ex.error)
    step("a kernel killed from inside is restarted, without its state, and says so")
    sbx.remove_code_context(root)

    started = time.monotonic()
    try:
        ex = sbx.run_code("import time\nwhile True: time.sleep(0.1)", timeout=2)
    except Exception as e:  # the SDK's timeout
        assert "timeout" in type(e).__name__.lower() or "timed out" in str(e).lower(), e
    else:
        raise AssertionError(f"a cell that never returns returned: {ex}")
    assert time.monotonic() - started < 30
    ex = sbx.run_code("x")
    assert ex.text == "41", (ex.text, ex.error)
    step("a cell abandoned by its client is interrupted, and the context keeps its state")

    # Each kernel takes 60 to 220 MiB of a sandbox's 512: R and TypeScript
    # each in a sandbox of their own, beside its default contexts.
    sbx = Sandbox.create(timeout=120)
    made.append(sbx)
    ex = sbx.run_code('print("Hello, World!")', language="r")
    assert ex.logs.stdout == ['[1] "Hello, World!"\n'], (ex.logs, ex.error)
    ex = sbx.run_code("Sys.getenv('E2B_STEP')", language="r", envs={"E2B_STEP": "r-mine"})
    assert [r.text for r in ex.results] == ['[1] "r-mine"'], ex.results
    ex = sbx.run_code("Sys.getenv('E2B_STEP', unset = 'gone')\ngetwd()", language="r")
    assert [r.text for r in ex.results] == ['[1] "gone"', '[1] "/home/user"'], ex.results
    step("R runs in IRkernel, with its execution's env vars its own")

    # A removed context's kernel goes with it (R's kernel, in a session of
    # its own, does not watch for its parent's end).
    extra = sbx.create_code_context(language="r")
    sbx.run_code("1", context=extra)
    sbx.remove_code_context(extra)
    count = lambda: sbx.commands.run("pgrep -c -f 'bin/exec/[R]' || true", user="root").stdout.strip()
    deadline = time.monotonic() + 5
    while count() != "1" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert count() == "1", count()
    step("a removed context's kernel is gone with it")

    sbx = Sandbox.create(timeout=120)
    made.append(sbx)
    ex = sbx.run_code("const message: string = 'Hello, World!'; console.log(message)", language="ts")
    assert ex.logs.stdout == ["Hello, World!\n"], (ex.logs, ex.error)
    ex = sbx.run_code("import { readFileSync } from 'fs'\nconsole.log(typeof readFileSync)", language="typescript")
    assert ex.logs.stdout == ["function\n"], (ex.logs, ex.error)
    ex = sbx.run_code("process.cwd()", language="ts")
    assert ex.text == "/home/user", (ex.text, ex.error)
    ex = sbx.run_code("process.env.E2B_STEP", language="ts", envs={"E2B_STEP": "ts-mine"})
    assert ex.text == "ts-mine", (ex.text, ex.error)
    ex = sbx.run_code("process.env.E2B_STEP ?? 'gone'", language="ts")
    assert ex.text == "gone", (ex.text, ex.error)
    step("TypeScript runs in Deno's kernel: types, ESM imports, its execution's env vars its own")

    # Java's env vars are system properties, as on E2B: the sandbox's set at
    # the kernel's start, an execution's around it; a value is data, never code.
    sbx = Sandbox.create(timeout=120, envs={"E2B_SANDBOX_STEP": "sandbox-wide"})
    made.append(sbx)
    ex = sbx.run_code('System.out.println("Hello, World!")', language="java")
    assert ex.logs.stdout == ["Hello, World!\n"], (ex.logs, ex.error)
    ex = sbx.run_code('System.getProperty("E2B_SANDBOX_STEP") + " " + System.getProperty("user.dir")', language="java")
    assert ex.text == "sandbox-wide /home/user", (ex.text, ex.error)
    hostile = '"); System.exit(3); ("\\u0022); System.exit(4); //\u00e9\n'
    ex = sbx.run_code('System.getProperty("E2B_STEP")', language="java", envs={"E2B_STEP": hostile, "E2B_SANDBOX_STEP": "mine"})
    assert ex.text == hostile, (ex.text, ex.error)
    ex = sbx.run_code('System.getProperty("E2B_STEP", "gone") + " " + System.getProperty("E2B_SANDBOX_STEP")', language="java")
    assert ex.text == "gone sandbox-wide", (ex.text, ex.error)
    step("Java runs in JJava, env vars its system properties (the sandbox's and an execution's)")

    # The same (default) Java context: a second JVM of about 220 MiB would
    # not fit beside it and the default contexts in the sandbox's 512.
    sbx.run_code("int kept = 5;", language="java")
    try:
        sbx.run_code("while (true) {}", language="java", timeout=2)
    except Exception as e:  # the SDK's timeout
        assert "timeout" in type(e).__name__.lower() or "timed out" in str(e).lower(), e
    else:
        raise AssertionError("a Java cell that never returns returned")
    ex = sbx.run_code("kept * 2", language="java")
    assert ex.text == "10", (ex.text, ex.error)
    step("an abandoned Java cell is interrupted (by message: a SIGINT would end the JVM), its state kept")

    ex = sbx.run_code("System.exit(3);", language="java")
    assert ex.error is not None and ex.error.name == "ContextRestarting", ex.error
    ex = sbx.run_code("1 + 1", language="java")
    assert ex.text == "2", (ex.text, ex.error)
    step("a Java kernel that exits is restarted and says so")
finally:
    for s in made:
        s.kill()

print("interpreter scenario passed", flush=True)
