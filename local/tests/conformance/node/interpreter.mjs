// The code interpreter is the real one, through the official
// `@e2b/code-interpreter` JavaScript SDK (the version package.json pins):
// the JavaScript side of `../interpreter.py`. Default contexts from the
// start; IPython's dedent, E2B's formatters (DataFrame data, chart, LaTeX,
// a saved PIL image, JSON); an execution's env vars and cwd in each language
// (Python, JavaScript, TypeScript on Deno, R on IRkernel, Java on JJava,
// bash on bash_kernel); a kernel killed from inside restarted and reported;
// an abandoned cell interrupted with its context's state kept. Run by the
// Rust test `js_sdk_interpreter`; prints `OK <n> checks` at the end.

import assert from 'node:assert/strict'

import { Sandbox } from '@e2b/code-interpreter'

let checks = 0
function eq(actual, expected, message) {
  assert.deepStrictEqual(actual, expected, message)
  checks++
}

const made = []
async function create(opts = {}) {
  const sbx = await Sandbox.create({ timeoutMs: 120_000, ...opts })
  made.push(sbx)
  return sbx
}

/** Every result's text (R's are displays, not the main result). */
const texts = (ex) => ex.results.map((r) => r.text).join('\n')

/** The env var E2B_STEP, set for one execution (`read` shows it as
 * `mine`), then gone (`readOrGone` shows `gone`). */
async function envsAreTheExecutions(sbx, language, read, mine, readOrGone, gone) {
  let ex = await sbx.runCode(read, { language, envs: { E2B_STEP: 'step-mine' } })
  eq(texts(ex), mine, `${language}: an execution's env var (${ex.error?.value})`)
  ex = await sbx.runCode(readOrGone, { language })
  eq(texts(ex), gone, `${language}: the env var is gone after it (${ex.error?.value})`)
}

async function main() {
  let sbx = await create({ envs: { E2B_SANDBOX_STEP: 'sandbox-wide' } })
  eq((await sbx.listCodeContexts()).map((c) => c.language), ['python', 'javascript'], 'default contexts')

  let ex = await sbx.runCode("  x = 41\n  print('indented')\n  x + 1")
  eq([ex.logs.stdout, ex.text], [['indented\n'], '42'], 'an indented cell runs')

  ex = await sbx.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2]})")
  eq(ex.results[0].data, { a: [1, 2] }, "a DataFrame's data")

  ex = await sbx.runCode(
    "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 5, 6])\nplt.title('growth')\nplt.show()",
  )
  const [figure] = ex.results
  eq([!!figure.png, figure.chart?.type, figure.chart?.title], [true, 'line', 'growth'], "a figure's chart")

  ex = await sbx.runCode("from IPython.display import display\ndisplay({'text/latex': r'\\frac{1}{2}'}, raw=True)")
  eq(ex.results.map((r) => r.latex), ['\\frac{1}{2}'], 'a raw LaTeX display')

  ex = await sbx.runCode("from PIL import Image\nImage.new('RGB', (8, 8), 'red').save('/tmp/red.png')")
  eq(ex.results.map((r) => !!r.png), [true], 'a saved PIL image is displayed once')

  ex = await sbx.runCode("{'n': 1, 'items': [1, 2]}")
  eq(ex.results[0].json, { n: 1, items: [1, 2] }, "a dict's json")

  await envsAreTheExecutions(sbx, 'python', "import os\nos.environ['E2B_STEP']", 'step-mine', "os.environ.get('E2B_STEP', 'gone')", 'gone')
  await envsAreTheExecutions(sbx, 'javascript', 'process.env.E2B_STEP', 'step-mine', "process.env.E2B_STEP ?? 'gone'", 'gone')
  ex = await sbx.runCode("import { readFileSync } from 'fs'\nconsole.log(typeof readFileSync, process.cwd())", { language: 'js' })
  eq(ex.logs.stdout, ['function /home/user\n'], `JavaScript imports; its cwd (${ex.error?.value})`)

  ex = await sbx.runCode('echo $E2B_STEP; pwd; false', { language: 'bash', envs: { E2B_STEP: 'bash-mine' } })
  eq([ex.logs.stdout, ex.error?.value], [['bash-mine\n', '/home/user\n'], '1'], 'bash: env, cwd, exit status')

  const counts = [(await sbx.runCode('1')).executionCount, (await sbx.runCode('1')).executionCount]
  eq(counts[1], counts[0] + 1, 'the kernel numbers executions')

  const root = await sbx.createCodeContext({ language: 'python', cwd: '/root' })
  ex = await sbx.runCode('import os\nos.getcwd(), os.getuid()', { context: root })
  eq(ex.text, "('/root', 0)", 'a context in /root, as root')
  ex = await sbx.runCode('y = 7\nimport os\nos.kill(os.getpid(), 9)', { context: root })
  eq(ex.error?.name, 'ContextRestarting', 'a kernel killed from inside says so')
  ex = await sbx.runCode('y', { context: root })
  eq(ex.error?.name, 'NameError', 'and is restarted without its state')
  await sbx.removeCodeContext(root)

  await assert.rejects(sbx.runCode('import time\nwhile True: time.sleep(0.1)', { timeoutMs: 2_000 }))
  ex = await sbx.runCode('x')
  eq(ex.text, '41', 'an abandoned cell is interrupted, the state kept')

  // Each further kernel takes 100 to 220 MiB of a sandbox's 512: Java here,
  // R and TypeScript in a sandbox of their own.
  ex = await sbx.runCode('System.getProperty("E2B_SANDBOX_STEP") + " " + System.getProperty("user.dir")', { language: 'java' })
  eq(ex.text, 'sandbox-wide /home/user', `Java: the sandbox's env vars are properties (${ex.error?.value})`)
  await envsAreTheExecutions(sbx, 'java', 'System.getProperty("E2B_STEP")', 'step-mine', 'System.getProperty("E2B_STEP", "gone")', 'gone')

  sbx = await create()
  ex = await sbx.runCode('getwd()', { language: 'r' })
  eq(texts(ex), '[1] "/home/user"', `R: its cwd (${ex.error?.value})`)
  await envsAreTheExecutions(sbx, 'r', "Sys.getenv('E2B_STEP')", '[1] "step-mine"', "Sys.getenv('E2B_STEP', unset = 'gone')", '[1] "gone"')
  ex = await sbx.runCode("const m: string = 'typed'; console.log(m, process.cwd())", { language: 'ts' })
  eq(ex.logs.stdout, ['typed /home/user\n'], `TypeScript: types; its cwd (${ex.error?.value})`)
  await envsAreTheExecutions(sbx, 'typescript', 'process.env.E2B_STEP', 'step-mine', "process.env.E2B_STEP ?? 'gone'", 'gone')
}

try {
  await main()
  console.log(`OK ${checks} checks`)
} finally {
  await Promise.all(made.map((sbx) => sbx.kill().catch(() => {})))
}
