"""Checks dist/server.json as the MCP Registry would, offline.

Usage: python check_server_json.py SERVER_JSON DIST_DIR

- valid against the registry's published JSON Schema (2025-12-11, vendored
  here as server.schema.json: see README.md), formats included;
- each package's ownership proof as the registry verifies it: npm's
  package.json names the server in `mcpName`; an MCPB package's
  `fileSha256` is the bundle's in DIST_DIR;
- every version is the release's, and no secret value is written in it.
"""

import hashlib
import json
import pathlib
import sys

import jsonschema

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


def problems(server: dict, dist: pathlib.Path) -> list[str]:
    schema = json.loads((HERE / "server.schema.json").read_text())
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    found = [
        f"schema: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in validator.iter_errors(server)
    ]
    name, version = server.get("name"), server.get("version")
    for package in server.get("packages", []):
        kind = package.get("registryType")
        if package.get("version") != version:
            found.append(f"{kind}: version {package.get('version')!r}, not the server's {version!r}")
        if kind == "npm":
            manifest = json.loads((ROOT / "bindings/node/package.json").read_text())
            if manifest.get("mcpName") != name:
                found.append(f"npm: package.json's mcpName is {manifest.get('mcpName')!r}, not {name!r}")
            if manifest.get("name") != package.get("identifier"):
                found.append(f"npm: the package is {manifest.get('name')!r}")
        elif kind == "mcpb":
            bundle = dist / package["identifier"].rsplit("/", 1)[-1]
            if not bundle.is_file():
                found.append(f"mcpb: {bundle.name} is not in {dist}")
            else:
                digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
                if package.get("fileSha256") != digest:
                    found.append(f"mcpb: fileSha256 {package.get('fileSha256')} is not {bundle.name}'s {digest}")
        else:
            found.append(f"{kind}: a package type this check does not know")
        for variable in package.get("environmentVariables", []):
            if variable.get("isSecret") and ("value" in variable or "default" in variable):
                found.append(f"{kind}: secret {variable['name']} has a value")
    return found


def main() -> int:
    server_path, dist = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    found = problems(json.loads(server_path.read_text()), dist)
    for problem in found:
        print(f"{server_path}: {problem}", file=sys.stderr)
    if not found:
        print(f"{server_path}: valid ({len(json.loads(server_path.read_text())['packages'])} packages)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
