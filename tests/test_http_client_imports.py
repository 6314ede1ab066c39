"""An outgoing HTTP request (httpx over httpcore, as the git host client and the webhook
deliveries make them) imports nothing once the client is warm.

httpcore asks `sniffio` which async library runs, importing it inside the function, four times
a request (a warm GET here). With sniffio missing each ask is a failed import: a search of every
`sys.path` entry, its file system calls releasing and taking again the interpreter lock
(docs/decisions/0111). With sniffio hidden (a finder that refuses it), this test fails: four
searches for `sniffio`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

import httpx


class _Looks(MetaPathFinder):
    """Notes every module name the import system searches for, and finds none itself."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        self.names.append(fullname)
        return None


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers every request on the connection until the client closes it."""
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()
        await writer.wait_closed()


async def _searched_during_a_request() -> list[str]:
    connections: list[asyncio.Task[None]] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(asyncio.current_task())  # type: ignore[arg-type]
        await _answer(reader, writer)

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    looks = _Looks()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(2):  # warm: the connection open, lazy imports done
                (await client.get("/warm")).raise_for_status()
            sys.meta_path.insert(0, looks)
            try:
                (await client.get("/measured")).raise_for_status()
            finally:
                sys.meta_path.remove(looks)
    finally:
        server.close()
        await server.wait_closed()
        await asyncio.gather(*connections)  # each ends when the client has closed it
    return looks.names


def test_a_warm_async_request_searches_for_no_module() -> None:
    assert asyncio.run(_searched_during_a_request()) == []
