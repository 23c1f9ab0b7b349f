"""A bare HTTP server on 127.0.0.1 answering ``POST /submit`` with a test's handler: the
other side of an envelope post, for tests of the sending side."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

__all__ = ["submit_server"]


@contextlib.asynccontextmanager
async def submit_server(
    handle: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[str]:
    """Serve ``handle`` at ``/submit`` on a free port; yields the URL, stops on exit."""
    app = web.Application()
    app.router.add_post("/submit", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        yield f"http://127.0.0.1:{port}/submit"
    finally:
        await runner.cleanup()
