"""The local directory tests' endpoints (tests/uagents/local/test_directory*.py): two agent
addresses, and real HTTP servers on 127.0.0.1 answering ``HEAD /submit`` readiness probes the way
a uagents agent does, one of them counting the probes and answering each late."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ADDR = "agent1qwtsvqrttweaa5kjq7seu2natjj4gh2qnh3q99ug9narsmgwchzy72nw57p"
ADDR2 = "agent1qg6q03f0tm5cchfskztzaj6yge9zhytd3fh9hrls73xwsdh44wey7hjrh8e"


class Endpoint:
    """An HTTP server answering readiness probes for ``serves`` (like a uagents agent)."""

    def __init__(self, *serves: str) -> None:
        self.serves = set(serves)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:
                ready = self.headers.get("x-uagents-address") in owner.serves
                self.send_response(200)
                self.send_header("x-uagents-status", "ready" if ready else "not-ready")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/submit"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class CountingEndpoint(Endpoint):
    """An Endpoint that counts readiness probes and answers each after ``delay`` seconds."""

    def __init__(self, *serves: str, delay: float = 0.0) -> None:
        self.probes = 0
        self.delay = delay
        super().__init__(*serves)
        handler = self.server.RequestHandlerClass
        owner = self
        original = handler.do_HEAD  # type: ignore[attr-defined]

        def counted(h: Any) -> None:
            owner.probes += 1
            time.sleep(owner.delay)
            original(h)

        handler.do_HEAD = counted  # type: ignore[attr-defined]
