"""The outbound allow-list: which hosts the component may reach.

The same rules as the Rust host's ``host/src/policy.rs``: the component
talks to the E2B control plane (``E2B_API_URL``, default
``https://api.<domain>``) and to the sandboxes (``E2B_SANDBOX_URL``, default
``https://<port>-<id>.<domain>``). Every other request is refused before a
connection is opened, so a buggy or compromised component cannot send the
API key anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple, Union
from urllib.parse import urlsplit

#: E2B's public domain, used when neither the config nor ``E2B_DOMAIN`` names one.
DEFAULT_DOMAIN = "e2b.app"


class PolicyError(ValueError):
    """A URL given for the allow-list is not an absolute http(s) URL."""

    def __init__(self, setting: str, value: str) -> None:
        super().__init__(f"{setting} is not an absolute http(s) URL: {value!r}")
        #: Which setting held the URL (``E2B_API_URL``, ``E2B_SANDBOX_URL``).
        self.setting = setting
        #: The rejected value.
        self.value = value


@dataclass(frozen=True)
class _Exact:
    """One scheme, host and port, from an explicit URL."""

    https: bool
    host: str
    port: int


@dataclass(frozen=True)
class _HttpsSubdomainsOf:
    """Any HTTPS host under ``domain`` on port 443 (sandbox hosts look like
    ``49983-<sandbox-id>.<domain>``)."""

    domain: str


_Rule = Union[_Exact, _HttpsSubdomainsOf]


def _split(url: str) -> Optional[Tuple[bool, str, int]]:
    """``(https, host, port)`` of an absolute http(s) URL, or None."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    https = parts.scheme == "https"
    host = parts.hostname.rstrip(".").lower()
    return https, host, port if port is not None else (443 if https else 80)


def _exact(setting: str, url: str) -> _Exact:
    split = _split(url)
    if split is None:
        raise PolicyError(setting, url)
    return _Exact(*split)


class OutboundPolicy:
    """The hosts one component instance may send requests to."""

    def __init__(self, rules: Tuple[_Rule, ...]) -> None:
        self._rules = rules

    @classmethod
    def for_endpoints(
        cls,
        api_url: Optional[str] = None,
        sandbox_url: Optional[str] = None,
        domain: Optional[str] = None,
    ) -> OutboundPolicy:
        """The allow-list of these endpoints: the API URL and sandbox URL if
        given, otherwise ``api.<domain>`` and the HTTPS hosts under
        ``<domain>`` (default ``e2b.app``). Raises :class:`PolicyError` for a
        URL that is not absolute http(s)."""
        domain = (domain or "").strip().rstrip(".").lower() or DEFAULT_DOMAIN
        api: _Rule = _exact("E2B_API_URL", api_url) if api_url else _Exact(True, f"api.{domain}", 443)
        sandbox: _Rule = _exact("E2B_SANDBOX_URL", sandbox_url) if sandbox_url else _HttpsSubdomainsOf(domain)
        # One server often serves both (the local backend does).
        return cls((api,) if sandbox == api else (api, sandbox))

    def allows(self, https: bool, authority: str) -> bool:
        """Whether a request to ``authority`` (``host[:port]``, as a
        ``wasi:http`` request carries it) over HTTPS or plain HTTP may leave
        the host."""
        split = _split(f"{'https' if https else 'http'}://{authority}")
        if split is None:
            return False
        _, host, port = split
        for rule in self._rules:
            if isinstance(rule, _Exact):
                if (rule.https, rule.host, rule.port) == (https, host, port):
                    return True
            elif https and port == 443 and host.endswith("." + rule.domain):
                return True
        return False

    def __str__(self) -> str:
        return ", ".join(
            f"{'https' if rule.https else 'http'}://{rule.host}:{rule.port}"
            if isinstance(rule, _Exact)
            else f"https://*.{rule.domain}:443"
            for rule in self._rules
        )

    def __repr__(self) -> str:
        return f"OutboundPolicy({self})"
