"""``scorewright serve --server uvicorn``: the reward service as an ASGI application, on
uvicorn, in the server's process (the optional extra ``pytest-scorewright[asgi]``).

Why uvicorn: the reference ASGI server (Encode's, the one FastAPI's and NeMo Gym's servers run
on), kept up month by month, with one small pure-Python dependency (h11) beyond click; it
reads requests on an event loop, so thousands of idle or slow connections cost no thread each
(the embedded server holds one thread per connection), and it drains on SIGTERM by itself.
Every answer comes from reward_routes.py, as the embedded server's do; scoring blocks, so it
runs on a pool of threads sized to the service's slots and queue."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest_scorewright.reward_routes as routes
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.reward_core import RewardService

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
#: A request whose body stalls for this long is dropped (reward_http.py IDLE_S, alike).
IDLE_S = 60
#: Request threads beyond the slots and the queue: enough that a burst past both is turned
#: away with 429 at once rather than waiting for a thread.
SPARE_THREADS = 32


class RewardApp:
    """The ASGI application of one :class:`RewardService`."""

    def __init__(self, service: RewardService, threads: ThreadPoolExecutor) -> None:
        self.service = service
        self._threads = threads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan is off (uvicorn.Config below); no websockets
            return
        path: str = scope["path"]
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope["headers"]
        }
        reply = await self._answer(scope["method"], path, headers, receive)
        if reply is not None:
            await _send(send, routes.counted(self.service, path, reply))

    async def _answer(
        self, method: str, path: str, headers: dict[str, str], receive: Receive
    ) -> routes.Reply | None:
        refusal = routes.refused(self.service, headers.get("authorization", ""))
        if refusal is not None:
            return refusal
        if method == "GET":
            return routes.answer_get(self.service, path)
        if method != "POST":
            return routes.json_reply(405, {"error": "use GET or POST"})
        cap = routes.body_cap(path)
        if cap is None:
            return routes.no_such_path()
        length = headers.get("content-length", "")
        if not length.isdigit():
            return routes.no_length()
        if int(length) > cap:
            # Read what was sent (up to a bound) before answering, as the embedded server does.
            await _read(receive, routes.DRAIN_MAX)
            return routes.too_large(cap)
        raw = await _read(receive, cap)
        if raw is None:
            return None  # the client went away, or stalled: nobody to answer
        if len(raw) > cap:
            return routes.too_large(cap)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._threads, routes.answer_post, self.service, path, raw
        )


async def _read(receive: Receive, most: int) -> bytes | None:
    """The body, stopping once past ``most`` bytes; None where the client left or stalled."""
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            message = await asyncio.wait_for(receive(), IDLE_S)
        except TimeoutError:
            return None
        if message["type"] == "http.disconnect":
            return None
        chunk: bytes = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > most or not message.get("more_body", False):
            return b"".join(chunks)


async def _send(send: Send, reply: routes.Reply) -> None:
    headers = [
        (b"content-type", reply.kind.encode()),
        (b"content-length", str(len(reply.data)).encode()),
        *((name.lower().encode(), value.encode()) for name, value in reply.headers.items()),
    ]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.data})


def _uvicorn_server() -> type[Any]:
    try:
        import uvicorn
    except ImportError:
        raise ConfigError(
            "--server uvicorn needs uvicorn: pip install 'pytest-scorewright[asgi]'"
        ) from None

    class CallersSignals(uvicorn.Server):
        """uvicorn's server leaving signals to its caller: ``scorewright serve`` drains on
        SIGTERM by calling :meth:`AsgiServer.shutdown`, as it does with the embedded server
        (uvicorn's own handlers would drain too, then raise the signal again after)."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return CallersSignals


class AsgiServer:
    """:class:`RewardApp` on uvicorn, with the embedded server's face (reward_http.py):
    ``server_address``, ``serve_forever``, ``shutdown`` (returns once serving has stopped,
    every request taken answered) and ``server_close``."""

    def __init__(self, address: tuple[str, int], service: RewardService) -> None:
        server_class = _uvicorn_server()  # first: a clear refusal where uvicorn is missing
        import uvicorn

        self.service = service
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        # Bound here, as the embedded server binds in its constructor: the port is known (and
        # a port in use refused) before serving starts.
        self._socket = socket.create_server(address, family=family, backlog=1024)
        self.server_address = self._socket.getsockname()
        queued = service.slots.capacity()
        self._threads = ThreadPoolExecutor(
            queued + SPARE_THREADS, thread_name_prefix="scorewright-request"
        )
        config = uvicorn.Config(
            RewardApp(service, self._threads),
            log_level="warning",
            access_log=False,  # paths and bodies are the caller's data
            lifespan="off",
            server_header=False,
            timeout_graceful_shutdown=None,  # a drain finishes every request taken
        )
        self._server = server_class(config)
        self._stopped = threading.Event()
        self._started = False
        service.recover_in_background()

    def serve_forever(self) -> None:
        self._started = True
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        self._server.should_exit = True
        if self._started:
            self._stopped.wait()

    def server_close(self) -> None:
        self._socket.close()
        self._threads.shutdown(wait=True)
        self.service.close()
