"""The outbound gate: the allow-list enforced on every ``wasi:http`` request.

wasmtime-py 50 implements ``wasi:http`` natively (``Linker.add_wasi_http``)
with no Python hook on outgoing requests. What it does allow is shadowing a
linker definition with a Python function, and calling into another
component instance from inside a host function. So the gate defines the
tools component's ``wasi:http/outgoing-handler.handle`` in Python, and a
tiny helper component (``_outbound.wat``), linked to the native
``wasi:http``, lets that function read the request's scheme and authority
and hand the request on to the native ``handle``. A refused request never
reaches the network: the component sees ``HTTP-request-denied``, reported
as a tool failure of kind ``network``, as with the Rust host.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Optional

import wasmtime
from wasmtime.component import Component, Func, Linker, Variant

from ._policy import OutboundPolicy

logger = logging.getLogger("e2b_tools")

_HANDLER = "wasi:http/outgoing-handler@"


def wasi_http_version(engine: wasmtime.Engine, component: Component) -> Optional[str]:
    """The ``wasi:http`` version whose ``outgoing-handler`` ``component``
    imports, or None when it imports none."""
    for name in component.type.imports(engine):
        if name.startswith(_HANDLER):
            return name[len(_HANDLER) :]
    return None


def helper_source(version: str) -> bytes:
    """The helper component's text for ``wasi:http`` ``version``."""
    if not version.startswith("0.2."):
        raise RuntimeError(f"unsupported wasi:http version {version} (expected 0.2.x)")
    text = Path(__file__).with_name("_outbound.wat").read_text(encoding="utf-8")
    return text.replace("WASI_HTTP_VERSION", version).encode("utf-8")


class Gate:
    """The allow-list of one instance, and the ``handle`` that enforces it.

    The ``handle`` a linker holds refers to this object only, never to the
    instance or its store: the store keeps its host functions alive, so a
    reference back would keep every instance alive forever."""

    def __init__(self, policy: OutboundPolicy) -> None:
        #: The hosts the instance may reach now (replaced on ``configure``).
        self.policy = policy

    def install(
        self,
        linker: Linker,
        helper_linker: Linker,
        store: wasmtime.Store,
        helper: Component,
        version: str,
    ) -> None:
        """Instantiates ``helper`` in ``store`` and defines, in ``linker``,
        the ``outgoing-handler.handle`` that admits only what ``policy``
        allows. ``linker`` must already hold the native ``wasi:http``."""
        instance = helper_linker.instantiate(store, helper)

        def export(name: str) -> Func:
            index = instance.get_export_index(store, name)
            func = instance.get_func(store, index) if index is not None else None
            if func is None:
                raise RuntimeError(f"the outbound gate's helper exports no {name}")
            return func

        scheme_of, authority_of, forward = export("scheme"), export("authority"), export("handle")
        gate = self

        def handle(ctx: Any, request: Any, options: Any) -> Any:
            # An exception here would trap the tools component: answer instead.
            try:
                scheme = scheme_of(ctx, request)
                authority = authority_of(ctx, request) or ""
            except Exception as err:  # noqa: BLE001
                return _refuse(ctx, request, options, Variant("internal-error", f"outbound gate: {err}"))
            # wasi:http sends a request without a scheme over HTTPS.
            tag = "HTTPS" if scheme is None else scheme.tag
            policy = gate.policy
            if tag not in ("HTTP", "HTTPS") or not policy.allows(tag == "HTTPS", authority):
                # Host and port only: paths and queries may carry identifiers.
                logger.warning(
                    "outbound request to %s://%s denied by policy (allowed: %s)", tag.lower(), authority, policy
                )
                return _refuse(ctx, request, options, Variant("HTTP-request-denied"))
            try:
                return forward(ctx, request, options)
            except Exception as err:  # noqa: BLE001
                return Variant("internal-error", f"outbound gate: {err}")

        linker.allow_shadowing = True
        with linker.root() as root:
            with root.add_instance(_HANDLER + version) as handler:
                handler.add_func("handle", handle)


def _refuse(ctx: Any, request: Any, options: Any, error: Variant) -> Variant:
    """Drops the refused request's resources and returns ``error``."""
    for resource in (request, options):
        if resource is not None:
            try:
                resource.drop(ctx)
            except wasmtime.WasmtimeError:
                # Best effort: the store frees what is left when it goes.
                pass
    return error
