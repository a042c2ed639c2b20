"""The official SDK on its production path: only E2B_API_KEY set (default
URLs: https://api.e2b.app, https://sandbox.e2b.app), the SDK's own `proxy`
option, the test CA by SSL_CERT_FILE. Performs, once each: create,
connect, set timeout, run command, start background, write, read, list,
run code, kill. Prints one JSON line of what it got back.

Usage: python sdk_production.py PROXY_URL
"""

import json
import sys

from e2b_code_interpreter import Sandbox


def main() -> None:
    proxy = sys.argv[1]
    sandbox = Sandbox.create(proxy=proxy)
    Sandbox.connect(sandbox.sandbox_id, proxy=proxy)
    sandbox.set_timeout(300)
    ran = sandbox.commands.run("echo $((6 * 7))")
    sandbox.commands.run("sleep 30", background=True)
    sandbox.files.write("/home/user/a.txt", "over TLS")
    content = sandbox.files.read("/home/user/a.txt")
    names = [entry.name for entry in sandbox.files.list("/home/user")]
    execution = sandbox.run_code("x = 41\nx + 1")
    sandbox.kill()
    print(
        json.dumps(
            {
                "stdout": ran.stdout,
                "content": content,
                "names": names,
                "text": execution.text,
            }
        )
    )


if __name__ == "__main__":
    main()
