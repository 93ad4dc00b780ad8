"""One engine of a multi-engine sweep as written in `[run] engines` or `staminad start --engine`, checked offline.

Kept apart from `engineconnect` (which connects) so reading a sweep file imports no Docker client.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

TLS_FILES = ("ca.pem", "cert.pem", "key.pem")
SCHEMES = ("unix", "tcp", "ssh")
MAX_SLOTS = 4096


class EngineSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One engine of `[run] engines` (or `staminad start --engine`)."""

    url: str
    slots: int = 4
    tls: str | None = None  # a directory holding ca.pem, cert.pem and key.pem
    # Where this engine's containers reach the daemon's LLM gateway: an address of the daemon's host that the
    # engine's host can route to. Needed for real harnesses on an engine elsewhere; by default the gateway
    # listens on the engine's own bridge, which exists only for an engine on the daemon's host.
    gateway: str | None = None


def check_spec(spec: EngineSpec) -> list[str]:
    """What is wrong with one engine entry, a line each (nothing: it is usable as far as can be told offline)."""
    errors = []
    parts = urlsplit(spec.url)
    if parts.scheme not in SCHEMES:
        errors.append(f"url {spec.url!r} must start with unix://, tcp:// or ssh://")
    elif parts.scheme == "unix" and not parts.path:
        errors.append(f"url {spec.url!r} names no socket path")
    elif parts.scheme in ("tcp", "ssh") and not parts.hostname:
        errors.append(f"url {spec.url!r} names no host")
    elif parts.scheme == "tcp":
        try:
            port = parts.port
        except ValueError:
            port = None
        if port is None:
            errors.append(f"url {spec.url!r} must name a port (tcp://HOST:PORT)")
    if not 1 <= spec.slots <= MAX_SLOTS:
        errors.append(f"{spec.url}: slots must be 1..{MAX_SLOTS} (got {spec.slots})")
    if spec.tls is not None:
        if parts.scheme != "tcp":
            errors.append(f"{spec.url}: tls applies to tcp:// engines only")
        missing = [f for f in TLS_FILES if not (Path(spec.tls) / f).is_file()]
        if missing:
            errors.append(f"{spec.url}: tls directory {spec.tls} lacks {', '.join(missing)}")
    if spec.gateway is not None:
        try:
            ip = ipaddress.ip_address(spec.gateway)
        except ValueError:
            errors.append(f"{spec.url}: gateway must be an IP address of this host, not {spec.gateway!r}")
        else:
            if ip.is_loopback or ip.is_unspecified or ip.version != 4:
                errors.append(
                    f"{spec.url}: gateway {spec.gateway} cannot be reached from a container (give an IPv4 address "
                    "of this host on the network the engine's host reaches it by)"
                )
    return errors


def parse_flag(text: str) -> EngineSpec:
    """`URL[,slots=N][,tls=DIR][,gateway=IP]` as `staminad start --engine` takes it; ValueError with one line if
    malformed."""
    url, *options = text.split(",")
    fields: dict[str, str] = {}
    for option in options:
        key, eq, value = option.partition("=")
        if not eq or key not in ("slots", "tls", "gateway") or key in fields:
            raise ValueError(f"--engine {text!r}: expected URL[,slots=N][,tls=DIR][,gateway=IP], not {option!r}")
        fields[key] = value
    try:
        slots = int(fields.get("slots", "4"))
    except ValueError:
        raise ValueError(f"--engine {text!r}: slots={fields['slots']!r} is not a number") from None
    spec = EngineSpec(url=url, slots=slots, tls=fields.get("tls"), gateway=fields.get("gateway"))
    errors = check_spec(spec)
    if errors:
        raise ValueError(f"--engine {text!r}: {errors[0]}")
    return spec


def published_host(spec: EngineSpec) -> str:
    """Where the engine's published ports are reached from the daemon: its host, or loopback for a local one."""
    parts = urlsplit(spec.url)
    return parts.hostname if parts.scheme in ("tcp", "ssh") and parts.hostname else "127.0.0.1"


__all__ = ["EngineSpec", "check_spec", "parse_flag", "published_host"]
