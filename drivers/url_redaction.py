"""URLs as they may be shown: a URL in a config (the broker's, a network camera's) may hold a password, and
what is logged, published or printed must never repeat it. One implementation, here because the drivers
cannot import the controller and the controller's config uses it as well."""

from __future__ import annotations

import ipaddress
import re

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
#: a URL inside a longer text (a GStreamer pipeline's `location=`): a quoted one ends at its quote, any
#: other at a space or a quote
_EMBEDDED_URL = re.compile(
    r"""(?<=")[A-Za-z][A-Za-z0-9+.-]*://[^"]*|(?<=')[A-Za-z][A-Za-z0-9+.-]*://[^']*"""
    r"""|[A-Za-z][A-Za-z0-9+.-]*://[^\s"']*"""
)
_STARTS_WITH_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_HIDDEN = "***"


def split_authority(url: str) -> tuple[str, str, str]:
    """(scheme, authority, everything after the authority), split as RFC 3986 does: the authority ends at
    the first `/`, `?` or `#`. So `mqtt://u:1/pw@host` is host `u`, port 1 and the path `/pw@host`, which a
    broker URL has no use for."""
    scheme, sep, after = url.partition("://")
    if not sep:
        return "", "", url
    cut = min((i for i in (after.find(c) for c in "/?#") if i >= 0), default=len(after))
    return scheme, after[:cut], after[cut:]


def redact_url(url: str) -> str:
    """`url` as it may be shown and logged: scheme, host and port only (`mqtt://user:secret@host` ->
    `mqtt://***@host`). Anything after the authority is replaced by `/***`.

    Without an `@`, `user:secret` cannot be told from `host:port`, so whatever is not plainly a host and a
    port is hidden: a port that is not one (`mqtt://user:secret`, or an all-digit password over 65535), more
    than one `:` (`mqtt://user:secret:1883`), brackets around anything but an IPv6 address. A password of at
    most five digits in `mqtt://user:12345` still reads as a port, and is shown as one."""
    scheme, authority, rest = split_authority(url)
    if not _SCHEME.fullmatch(scheme):
        return _HIDDEN
    _userinfo, at, hostport = authority.rpartition("@")
    if "@" in rest:
        # user info spilled past the authority (a password holding `/`, `?` or `#`): the host the sender
        # meant follows the last `@`
        at = "@"
        tail = url.rpartition("@")[2]
        cut = min((i for i in (tail.find(c) for c in "/?#") if i >= 0), default=len(tail))
        hostport, rest = tail[:cut], tail[cut:]
    shown = f"{scheme}://{'***@' if at else ''}{_shown_host_and_port(hostport)}"
    if rest not in ("", "/"):
        shown += "/***"
    return shown


def redact_urls_in(text: str) -> str:
    """`text` (a device's port, a camera source) with every URL in it redacted as `redact_url` does: all of
    it when it begins with one (a password may hold a space or a `!`), else each URL within it (a GStreamer
    pipeline's `location=...`)."""
    stripped = text.strip()
    if _STARTS_WITH_URL.match(stripped):
        return redact_url(stripped)
    return _EMBEDDED_URL.sub(lambda match: redact_url(match.group()), text)


def _shown_host_and_port(hostport: str) -> str:
    if hostport.startswith("["):
        address, bracket, after = hostport[1:].partition("]")
        if not bracket or not _is_ipv6(address) or (after and not after.startswith(":")):
            return _HIDDEN
        host, colon, port = f"[{address}]", after[:1], after[1:]
    elif hostport.count(":") > 1 or "[" in hostport or "]" in hostport:
        return _HIDDEN
    else:
        host, colon, port = hostport.partition(":")
    if not colon:
        return host
    return f"{host}:{port if _is_port(port) else _HIDDEN}"


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _is_port(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 5 and int(text) <= 65535
