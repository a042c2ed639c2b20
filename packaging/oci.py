"""The components as OCI artifacts, in the Wasm OCI layout wassette and wkg
read (one `application/wasm` layer, config `application/vnd.wasm.config.v0+json`,
as the CNCF TAG Runtime's Wasm OCI artifact spec and bytecodealliance's
oci-wasm write them), and their push to a registry with oras-py.

  python oci.py layout WASM DIR --version V --description D --source URL --created T
      writes DIR as an OCI image layout (oci-layout, index.json, blobs/)
  python oci.py push DIR REGISTRY/REPOSITORY:TAG [--plain-http]
      pushes the layout's blobs and manifest; HTTPS trusts the system store or
      REQUESTS_CA_BUNDLE, --plain-http is for a registry without TLS
  python oci.py annotations REGISTRY/REPOSITORY:TAG
      prints the pushed manifest's annotations as JSON

The manifest carries the OCI annotations a registry page and `wkg` show
(title, description, version, licences, source, revision, created); no
policy is bundled (wassette 0.8.1 refuses one the operator did not trust:
the operator grants permissions with `wassette permission grant`).
"""

import argparse
import hashlib
import json
import pathlib
import sys

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.wasm.config.v0+json"
LAYER = "application/wasm"
REQUIRED_ANNOTATIONS = (
    "org.opencontainers.image.title",
    "org.opencontainers.image.description",
    "org.opencontainers.image.version",
    "org.opencontainers.image.licenses",
    "org.opencontainers.image.source",
    "org.opencontainers.image.created",
)


def blob(layout: pathlib.Path, data: bytes, media_type: str, **extra) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    path = layout / "blobs" / "sha256" / digest.split(":")[1]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return {"mediaType": media_type, "digest": digest, "size": len(data), **extra}


def canonical(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def layout(args: argparse.Namespace) -> None:
    out = pathlib.Path(args.dir)
    wasm = pathlib.Path(args.wasm)
    data = wasm.read_bytes()
    if data[:8] != b"\0asm\x0d\0\x01\0":
        sys.exit(f"oci.py: {wasm} is not a WebAssembly component (its header is {data[:8]!r})")
    out.mkdir(parents=True, exist_ok=True)
    layer = blob(out, data, LAYER, annotations={"org.opencontainers.image.title": wasm.name})
    config = {
        "created": args.created,
        "author": None,
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer["digest"]],
    }
    annotations = {
        "org.opencontainers.image.title": wasm.stem,
        "org.opencontainers.image.description": args.description,
        "org.opencontainers.image.version": args.version,
        "org.opencontainers.image.licenses": args.license,
        "org.opencontainers.image.source": args.source,
        "org.opencontainers.image.created": args.created,
    }
    if args.revision:
        annotations["org.opencontainers.image.revision"] = args.revision
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": blob(out, canonical(config), CONFIG),
        "layers": [layer],
        "annotations": annotations,
    }
    descriptor = blob(out, canonical(manifest), MANIFEST)
    descriptor["annotations"] = {"org.opencontainers.image.ref.name": args.version}
    (out / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    (out / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [descriptor]}, indent=2))


def read_layout(directory: pathlib.Path) -> tuple[dict, pathlib.Path]:
    index = json.loads((directory / "index.json").read_text())
    descriptor = index["manifests"][0]
    blobs = directory / "blobs" / "sha256"
    manifest = json.loads((blobs / descriptor["digest"].split(":")[1]).read_bytes())
    missing = [key for key in REQUIRED_ANNOTATIONS if not manifest.get("annotations", {}).get(key)]
    if missing:
        sys.exit(f"oci.py: {directory}: the manifest lacks the annotations {', '.join(missing)}")
    return manifest, blobs


def registry(reference: str, plain_http: bool):
    import oras.container
    import oras.provider

    container = oras.container.Container(reference)
    return oras.provider.Registry(hostname=container.registry, insecure=plain_http), container


def push(args: argparse.Namespace) -> None:
    import requests

    manifest, blobs = read_layout(pathlib.Path(args.dir))
    client, container = registry(args.reference, args.plain_http)
    try:
        for descriptor in [manifest["config"], *manifest["layers"]]:
            path = blobs / descriptor["digest"].split(":")[1]
            answer = client.upload_blob(str(path), container, descriptor)
            answer.raise_for_status()
        answer = client.upload_manifest(manifest, container)
        answer.raise_for_status()
    except requests.HTTPError as error:
        body = error.response.text.strip()[:300] if error.response is not None else ""
        sys.exit(f"oci.py: the registry refused the push to {args.reference}: {error} {body}")
    except (requests.ConnectionError, requests.Timeout) as error:
        sys.exit(f"oci.py: cannot reach the registry of {args.reference}: {error}")
    except (requests.RequestException, ValueError) as error:
        # A registry that does not serve the name answers outside the OCI
        # distribution API (a plain 404 page), which oras cannot parse.
        sys.exit(f"oci.py: the registry refused the push to {args.reference}: it answered outside the OCI distribution API ({error})")
    print(f"pushed {args.reference} ({manifest['layers'][0]['digest']})")


def annotations(args: argparse.Namespace) -> None:
    client, container = registry(args.reference, args.plain_http)
    print(json.dumps(client.get_manifest(container).get("annotations", {}), indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("layout")
    p.add_argument("wasm")
    p.add_argument("dir")
    for flag in ("--version", "--description", "--source", "--created"):
        p.add_argument(flag, required=True)
    p.add_argument("--license", default="MIT")
    p.add_argument("--revision", default="")
    p.set_defaults(run=layout)
    for name, run in (("push", push), ("annotations", annotations)):
        p = commands.add_parser(name)
        if name == "push":
            p.add_argument("dir")
        p.add_argument("reference")
        p.add_argument("--plain-http", action="store_true")
        p.set_defaults(run=run)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
