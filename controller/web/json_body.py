"""Reading a client's JSON body: bounded in size and time, never nested deeper than the pages send, and a
refused body answered with a 4xx and its reason (counted in `REJECTIONS`, no traceback).

The dealer's panel and the supervisors' console read every POST through `read_json`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from controller.web.server import REJECTIONS

#: a request body (a command: a few dozen bytes) must arrive within this long
BODY_SECONDS = 5.0
#: JSON from a client is never nested deeper than this (the pages send flat objects); deeper is refused
#: before parsing, so that no payload can reach the parser's recursion limit
MAX_JSON_DEPTH = 32


class BadRequestBody(ValueError):
    """A request body that is refused (too large, too slow, not JSON, too deeply nested), with its status
    and a short reason for the client."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        #: for the rejection counts: too_large, too_slow, not_json, too_deep
        self.reason = reason


def json_depth_exceeded(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `body` opens more than `limit` arrays or objects inside one another (outside strings). A
    linear scan, no recursion: it runs before the parser, whose recursion a deep enough payload exhausts."""
    depth = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return False


def parse_json(body: bytes) -> Any:
    """`body` as JSON (an empty body is `{}`); raises BadRequestBody (400) if it is not JSON or nested
    deeper than MAX_JSON_DEPTH."""
    if not body.strip():
        return {}
    if json_depth_exceeded(body):
        raise BadRequestBody(400, "too_deep", f"the payload is nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(body)
    except RecursionError:  # unreachable after the depth check; kept so that no parser limit is a 500
        raise BadRequestBody(400, "too_deep", "the payload is nested too deeply") from None
    except ValueError as exc:  # also a UnicodeDecodeError
        raise BadRequestBody(400, "not_json", f"the payload is not valid JSON: {exc}") from None


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The request's body; raises BadRequestBody if it is larger than `max_bytes` (413) or does not
    arrive within BODY_SECONDS (408: a slow body must not hold a connection and a task)."""
    body = bytearray()
    try:
        async with asyncio.timeout(BODY_SECONDS):
            async for chunk in request.stream():
                body += chunk
                if len(body) > max_bytes:
                    raise BadRequestBody(413, "too_large", f"the payload is larger than {max_bytes} bytes")
    except TimeoutError:
        raise BadRequestBody(
            408, "too_slow", f"the payload did not arrive within {BODY_SECONDS:g} s"
        ) from None
    return bytes(body)


async def read_json(request: Request, max_bytes: int) -> Any:
    """The request's body as JSON (see `read_body`, `parse_json`)."""
    return parse_json(await read_body(request, max_bytes))


def body_refusal(
    server: str, exc: BadRequestBody, error: Callable[[int, str], Response], *, usage: str | None = None
) -> Response:
    """The answer to a body `server` will not read (too large, too slow, not JSON, too deep): `error`'s
    4xx with the reason, counted. With `usage`, a body that is not JSON is answered with a 400 saying what to
    send instead (a sign-in form)."""
    REJECTIONS.count(server, exc.reason, f"refused a request body: {exc}")
    if usage is not None and exc.reason == "not_json":
        return error(400, usage)
    return error(exc.status, str(exc))
