"""Fan-out of dashboard frames to the connected clients, each through its own small queue.

Each client's `asyncio.Queue` holds at most `dashboard.client_queue` frames; when full, its
oldest frame is dropped (counted): a slow client never holds up the others. A client whose
queue stays full for `dashboard.client_timeout_s` (it stopped reading) is closed and forgotten.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass


@dataclass
class Client:
    id: int
    queue: asyncio.Queue
    dropped: int = 0
    sent: int = 0
    stalled_since: float | None = None
    closed: bool = False


class ClientQueues:
    def __init__(self, capacity: int, timeout_s: float):
        self.capacity, self.timeout_s = capacity, timeout_s
        self.clients: dict[int, Client] = {}
        self._ids = itertools.count(1)
        self.dropped_frames = 0
        self.clients_timed_out = 0
        self.clients_total = 0

    def add(self) -> Client:
        client = Client(next(self._ids), asyncio.Queue(maxsize=self.capacity))
        self.clients[client.id] = client
        self.clients_total += 1
        return client

    def remove(self, client: Client) -> None:
        client.closed = True
        self.clients.pop(client.id, None)

    def offer(self, payload: bytes, now: float | None = None) -> None:
        """Queue `payload` (one encoded event: the same bytes for every client) for every
        client, dropping each one's oldest frame when its queue is full."""
        now = time.monotonic() if now is None else now
        for client in list(self.clients.values()):
            queue = client.queue
            if queue.full():
                if client.stalled_since is None:
                    client.stalled_since = now
                elif now - client.stalled_since > self.timeout_s:
                    self.clients_timed_out += 1
                    self.remove(client)
                    continue
                queue.get_nowait()
                client.dropped += 1
                self.dropped_frames += 1
            else:
                client.stalled_since = None
            queue.put_nowait(payload)

    def summary(self) -> dict[str, int]:
        return {
            "connected": len(self.clients),
            "total": self.clients_total,
            "dropped_frames": self.dropped_frames,
            "timed_out": self.clients_timed_out,
        }
