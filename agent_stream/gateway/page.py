"""The web page at ``/`` and its assets under ``/static/`` (all served here: no internet).

The page (``static/index.html``, ``app.js``, ``app.css``) is a chat: it reads the native Message
stream of ``POST /v1/stream`` and builds each reply live under the earlier turns, which it keeps
in the browser's localStorage and sends with each question as its ``history``. Vendored
libraries, with their licences, are in ``static/vendor/`` (see ``static/vendor/README.md``):
marked (markdown), DOMPurify (every piece of HTML made from agent text is sanitised before it
reaches the DOM) and highlight.js (code).
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

__all__ = ["STATIC", "routes"]

STATIC = Path(__file__).resolve().parent / "static"

# The page runs no inline script and loads nothing from elsewhere.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


async def index(request: Request) -> Response:
    """``GET /``: the page.

    Args:
        request: the HTTP request.
    """
    request.state.format = "page"
    return FileResponse(
        STATIC / "index.html",
        media_type="text/html; charset=utf-8",
        headers={
            "content-security-policy": CSP,
            "x-content-type-options": "nosniff",
            "cache-control": "no-cache",
        },
    )


async def favicon(request: Request) -> Response:
    """No icon (and no 404 in the browser's console).

    Args:
        request: the HTTP request.
    """
    return Response(status_code=204)


def routes() -> list[BaseRoute]:
    """``/``, ``/favicon.ico`` and ``/static/``."""
    return [
        Route("/", index, methods=["GET"]),
        Route("/favicon.ico", favicon, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
