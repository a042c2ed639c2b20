"""The on-disk cache of compiled components.

Compiling the component takes about half a second; deserializing a compiled
copy takes a few milliseconds. Entries are keyed by the SHA-256 of the
component's bytes, the wasmtime version and the platform, so a new
component, a wasmtime upgrade or a different machine never reuses an entry
(wasmtime also refuses an entry made with another version or configuration,
and such an entry is recompiled).

Each file is ``MAGIC``, the SHA-256 of the payload, then the payload
(``Component.serialize()``). wasmtime trusts the bytes it deserializes, so
the checksum is verified first: a truncated or corrupted file is compiled
again and replaced, never loaded. Files are written to a temporary name and
renamed into place, so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Callable, Literal, Optional, Tuple, Union

import wasmtime
from wasmtime.component import Component

logger = logging.getLogger("e2b_tools")

#: Redirects the cache to another directory, or disables it with ``off``.
CACHE_ENV = "E2B_TOOLS_CACHE_DIR"

_MAGIC = b"E2BTC\x00\x01\n"
_DIGEST = 32

#: How a component was obtained: deserialized from the disk cache, or compiled.
CacheSource = Literal["cache", "compiled"]


def default_cache_dir() -> Optional[Path]:
    """``$E2B_TOOLS_CACHE_DIR`` (None when it is ``off``), else
    ``$XDG_CACHE_HOME/e2b-tools``, else ``~/.cache/e2b-tools``."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None and configured.strip():
        return None if configured.strip().lower() == "off" else Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "e2b-tools"


def _wasmtime_version() -> str:
    """The installed wasmtime's version, from its ``.dist-info`` directory
    (``importlib.metadata`` costs tens of milliseconds at start-up)."""
    try:
        # Closed on return: an iterator left open is a ResourceWarning.
        with os.scandir(Path(wasmtime.__file__).parent.parent) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith("wasmtime-") and name.endswith(".dist-info"):
                    return name[len("wasmtime-") : -len(".dist-info")]
    except OSError:
        pass
    # wasmtime still refuses an entry another version made.
    return "unknown"


def cache_key(data: bytes) -> str:
    """The cache file name for component bytes ``data``."""
    digest = hashlib.sha256(data).hexdigest()
    platform_tag = f"{sys.platform}-{platform.machine().lower()}"
    return f"{digest}-wasmtime-{_wasmtime_version()}-{platform_tag}.cwasm"


def load_component(
    engine: wasmtime.Engine,
    data: bytes,
    cache_dir: Optional[Path],
    compile: Callable[[wasmtime.Engine, bytes], Component],
) -> Tuple[Component, CacheSource]:
    """The component of ``data``: deserialized from ``cache_dir`` when a
    valid entry is there, else compiled with ``compile`` (and the entry
    written, best effort). Never fails because of the cache."""
    if cache_dir is None:
        return compile(engine, data), "compiled"
    path = cache_dir / cache_key(data)
    cached = _read(engine, path)
    if cached is not None:
        return cached, "cache"
    component = compile(engine, data)
    _write(path, bytes(component.serialize()))
    return component, "compiled"


def _read(engine: wasmtime.Engine, path: Path) -> Optional[Component]:
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        logger.debug("compile cache %s unreadable: %s", path, err)
        return None
    head = len(_MAGIC) + _DIGEST
    payload = blob[head:]
    if blob[: len(_MAGIC)] != _MAGIC or hashlib.sha256(payload).digest() != blob[len(_MAGIC) : head]:
        logger.warning("compile cache %s is corrupt; compiling again", path)
        return None
    try:
        return Component.deserialize(engine, payload)
    except wasmtime.WasmtimeError as err:
        # Another wasmtime build or engine configuration made it.
        logger.info("compile cache %s not usable (%s); compiling again", path, err)
        return None


def _write(path: Path, payload: bytes) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".cwasm")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError as err:
        logger.info("compile cache %s not written: %s", path, err)


def resolve_cache_dir(cache_dir: Union[str, "os.PathLike[str]", None, bool]) -> Optional[Path]:
    """A ``cache_dir`` argument as a directory: None for the default,
    False to disable, or a path."""
    if cache_dir is None or cache_dir is True:
        return default_cache_dir()
    if cache_dir is False:
        return None
    return Path(cache_dir)
