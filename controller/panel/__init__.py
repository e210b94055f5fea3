"""The dealer's touch panel (a web page served by the table service for a kiosk browser)."""

from controller.panel.app import PanelError, create_app, serve_panel

__all__ = ["PanelError", "create_app", "serve_panel"]
