"""Slow HTTP clients (slowloris) for the header-timeout tests: raw asyncio connections to
127.0.0.1 that send their request headers a byte at a time, or nothing at all."""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["HEAD", "Drip", "closed_within", "get", "read_response"]

# request headers that never end: after these bytes, the header value goes on and on
HEAD = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


class Drip:
    """A connection that sends ``HEAD`` (then ``a``s) one byte every ``period`` seconds until
    the server closes it, or ``limit`` seconds have passed."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        period: float = 0.3,
        limit: float = 10.0,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.period = period
        self.limit = limit
        self.received = b""
        self.bytes_sent = 0

    @classmethod
    async def open(cls, port: int, **kw: float) -> Drip:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, **kw)

    async def run(self) -> float | None:
        """Seconds from now until the server closed the connection (None: still open at
        ``limit``)."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        try:
            while loop.time() - start < self.limit:
                byte = HEAD[self.bytes_sent : self.bytes_sent + 1] or b"a"
                self.writer.write(byte)
                await self.writer.drain()
                self.bytes_sent += 1
                with contextlib.suppress(asyncio.TimeoutError):
                    data = await asyncio.wait_for(self.reader.read(4096), self.period)
                    if not data:
                        return loop.time() - start
                    self.received += data
        except (ConnectionResetError, BrokenPipeError):
            return loop.time() - start
        finally:
            self.writer.close()
        return None


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Whether the server closes the connection (EOF or reset) within ``seconds``; what it
    sends before is read and dropped."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    try:
        while (left := end - loop.time()) > 0:
            if not await asyncio.wait_for(reader.read(4096), left):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except asyncio.TimeoutError:
        return False
    return False


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """(status, body) of one response with a content-length."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    body = await asyncio.wait_for(reader.readexactly(length), 5)
    return status, body


async def get(port: int, path: str = "/") -> int:
    """The status of ``GET path`` on a new connection (whole headers at once)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        status, _ = await read_response(reader)
        return status
    finally:
        writer.close()


SLACK = 1.0  # seconds a busy 2-core machine may add to a timer


async def drip_while_getting(
    port: int, path: str = "/", timeout: float = 1.0
) -> tuple[float | None, Drip, list[int]]:
    """A client dripping its headers (a byte every 0.3 s) while plain GETs of ``path`` go on
    beside it: (seconds until the dripping one was cut off, or None; it; the GETs' statuses)."""
    drip = await Drip.open(port, period=0.3, limit=timeout + 4 * SLACK)
    dripping = asyncio.create_task(drip.run())
    statuses = []
    while not dripping.done():
        statuses.append(await get(port, path))
        await asyncio.sleep(0.1)
    return dripping.result(), drip, statuses
