"""uvicorn inside a tablectl process (the panel, the metrics endpoint, the console): started and stopped by
its caller, which owns the process's signals and its logging."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn
from starlette.types import ASGIApp


class _EmbeddedServer(uvicorn.Server):
    """uvicorn without its signal handling: the process owns SIGTERM/SIGINT (for a table, a clean stop of the
    whole table), and stops the server by cancelling `serve_until_cancelled`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def embedded_server(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    limit_concurrency: int,
    timeout_graceful_shutdown: int,
    **options: Any,
) -> uvicorn.Server:
    """A server for `app` that logs only warnings, through the process's own logging setup."""
    return _EmbeddedServer(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            limit_concurrency=limit_concurrency,
            log_level="warning",
            log_config=None,  # keep the process's logging setup
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=timeout_graceful_shutdown,
            **options,
        )
    )


async def serve_until_cancelled(
    server: uvicorn.Server, *, cannot_listen: Exception, on_cancel: Callable[[], None] | None = None
) -> None:
    """Serve until cancelled; then `on_cancel` (end what would hold up a graceful shutdown, such as open
    streams) and shut the server down. Raises `cannot_listen` if the server cannot listen on its address."""
    try:
        await server.serve()
    except SystemExit:
        # uvicorn exits the process when it cannot bind; the caller must rather say why and stop cleanly
        raise cannot_listen from None
    except asyncio.CancelledError:
        if on_cancel is not None:
            on_cancel()
        if hasattr(server, "servers"):  # it was listening
            server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.shutdown(), 5)
        raise
