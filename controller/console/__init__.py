"""The studio supervisor's console (`tablectl console`): every table of a studio, live, from the broker."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.console.app import Console, ConsoleError, create_app, serve_console

__all__ = ["Console", "ConsoleError", "create_app", "serve_console"]


def __getattr__(name: str) -> Any:
    # lazy: the CLI loads the web stack only when the console runs
    if name in __all__:
        from controller.console import app

        return getattr(app, name)
    raise AttributeError(name)
