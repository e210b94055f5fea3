"""The dealer's touch panel (a web page served by the table service for a kiosk browser)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.panel.app import PanelError, create_app, serve_panel

__all__ = ["PanelError", "create_app", "serve_panel"]


def __getattr__(name: str) -> Any:
    # lazy: the config and the CLI use controller.panel.auth without loading the web stack
    if name in __all__:
        from controller.panel import app

        return getattr(app, name)
    raise AttributeError(name)
