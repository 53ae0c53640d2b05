"""Dashboard clients for bench_online: N connections to the service's `GET /events`, in one
process of their own (asyncio, one TCP connection per client), each reading every byte the
server sends as fast as it comes, as a browser's EventSource does (about 25 frames a second).

    python benchmarks/sse_clients.py URL N [--stalled K] [--nice LEVEL]

`--stalled K` more clients connect and never read (a 2 KB receive buffer). Runs until the
server ends the streams or SIGTERM/SIGINT, then prints one JSON line: frames per client, the
process's CPU time and wall time (so the clients' own share of the 2 cores can be told apart
from the service's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import time
from urllib.parse import urlsplit

DATA = b"data: "


async def reader(host: str, port: int, counts: list[int], index: int) -> None:
    """One client: GET /events, then count the events (`data: ` lines) until the stream ends."""
    try:
        streams = await asyncio.open_connection(host, port)
    except OSError:
        return
    stream_in, stream_out = streams
    stream_out.write(
        f"GET /events HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    await stream_out.drain()
    tail = b""
    try:
        while chunk := await stream_in.read(65536):
            text = tail + chunk
            counts[index] += text.count(DATA)
            tail = text[-(len(DATA) - 1) :]
    except (OSError, asyncio.CancelledError):
        pass
    finally:
        stream_out.close()


def stalled(host: str, port: int) -> socket.socket:
    """A client that connects, asks for the events and never reads."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.connect((host, port))
    sock.sendall(f"GET /events HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    return sock


async def main(url: str, n: int, n_stalled: int) -> dict:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", int(parts.port or 80)
    idle = [stalled(host, port) for _ in range(n_stalled)]
    counts = [0] * n
    wall0, usage0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    tasks = [asyncio.create_task(reader(host, port, counts, k)) for k in range(n)]
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, done.set)
    ended = asyncio.ensure_future(asyncio.gather(*tasks))  # the server ended every stream
    stopped = asyncio.ensure_future(done.wait())
    await asyncio.wait([ended, stopped], return_when=asyncio.FIRST_COMPLETED)
    for future in (*tasks, stopped):
        future.cancel()
    await asyncio.gather(ended, stopped, return_exceptions=True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    for sock in idle:
        sock.close()
    cpu = (usage.ru_utime + usage.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
    wall = time.perf_counter() - wall0
    return {
        "frames": [max(c - 1, 0) for c in counts],
        "cpu_s": cpu,
        "wall_s": wall,
        "pid": os.getpid(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("n", type=int)
    parser.add_argument("--stalled", type=int, default=0)
    parser.add_argument("--nice", type=int, default=0, help="niceness added to this process")
    args = parser.parse_args()
    if args.nice:
        os.nice(args.nice)
    print(json.dumps(asyncio.run(main(args.url, args.n, args.stalled))), flush=True)
