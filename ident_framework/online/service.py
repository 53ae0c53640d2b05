"""mode=online: the service. Binds the port, starts the estimator process, serves the dashboard.

The socket first (a port in use fails at once), then the spawned estimator process, which
reports `ready` (or a user error: exit code 2); then uvicorn serves `web_app.py`. A reader
thread moves the estimator's frames into `ServiceState`; a broadcaster task merges them into
every client's queue `dashboard.publish_hz` times a second. This process runs at nice +5.
Shutdown (Ctrl-C, SIGTERM, `POST /api/stop`, the end of the stream): the estimator saves its
files and reports `final`.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import queue
import secrets
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ident_framework.config.run_config import RunConfig
from ident_framework.errors import UserError
from ident_framework.online.client_queues import ClientQueues
from ident_framework.online.estimator_process import estimator_main
from ident_framework.online.mcap_recording import McapRecording
from ident_framework.online.service_state import ServiceState, merge_frames
from ident_framework.reports.mcap_export import writer_class
from ident_framework.reports.run_files import CONFIG, ONLINE_FOLDER, ONLINE_MCAP

SEND_BUFFER_BYTES = 65536
WEB_NICE = 5  # the web process's niceness above the estimator's (lower priority)
_READY_TIMEOUT_S = 600.0  # excitation design and model building
_FINAL_TIMEOUT_S = 300.0  # the estimator's last twin fit and files


def _web_stack() -> tuple[Any, Any]:
    try:
        import uvicorn

        from ident_framework.online import web_app
    except ModuleNotFoundError as error:
        raise UserError(
            f"mode=online needs the web packages of the 'online' extra ({error.name} is not "
            'installed): pip install "ident-framework[online]" (from a checkout: '
            'pip install -e ".[online]").'
        ) from None
    return uvicorn, web_app


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (0: a free port); UserError when it cannot."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # accepted connections inherit it: ~1 s of frames in the kernel per client, so a client
        # that stops reading blocks its sends (and is dropped) within seconds, not megabytes
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        sock.bind((host, port))
        sock.listen(64)
    except OSError as error:
        sock.close()
        hint = (
            "Another program (perhaps another online service) uses that port: stop it, or pick "
            "another with online.port=PORT (online.port=0 takes a free one)."
            if error.errno == 98
            else "Check online.host: it must be an address of this computer (127.0.0.1 by default)."
        )
        raise UserError(
            f"The online service cannot listen on {host}:{port} (online.host, online.port): "
            f"{error.strerror}. {hint}"
        ) from None
    sock.setblocking(False)
    return sock


class EstimatorLink:
    """The estimator process and its queues, seen from the web process."""

    def __init__(self, cfg: DictConfig, run_dir: Path):
        context = multiprocessing.get_context("spawn")
        self.outbox = context.Queue(maxsize=64)
        self.commands = context.Queue()
        self.stop = context.Event()
        container = OmegaConf.to_container(cfg, resolve=True)
        self.process = context.Process(
            target=estimator_main,
            args=(container, str(run_dir), self.outbox, self.commands, self.stop),
            name="ident-online-estimator",
        )
        self.final: dict[str, Any] | None = None
        self.error: str | None = None
        self.internal = False

    def wait_ready(self) -> dict[str, Any]:
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                message = self.outbox.get(timeout=0.5)
            except queue.Empty:
                if not self.process.is_alive():
                    raise RuntimeError("the estimator process ended before it was ready") from None
                continue
            if message["kind"] == "ready":
                return message
            if message["kind"] == "error":
                self.process.join(timeout=10)
                if message.get("internal"):
                    raise RuntimeError(f"the estimator process failed:\n{message['message']}")
                raise UserError(message["message"])
        raise RuntimeError(f"the estimator was not ready within {_READY_TIMEOUT_S:g} s")

    def shutdown(self, timeout_s: float = _FINAL_TIMEOUT_S) -> None:
        self.stop.set()
        self.process.join(timeout=timeout_s)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout=5)


def run_online(config: RunConfig, cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """The whole service; returns the estimator's final summary."""
    settings = config.online
    uvicorn, web_app = _web_stack()
    if config.mcap:
        writer_class()  # the `mcap` package is there (UserError before anything starts)
    sock = bind(settings.host, settings.port)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / CONFIG).write_text(OmegaConf.to_yaml(cfg, resolve=True))
    link = EstimatorLink(cfg, run_dir)
    link.process.start()
    try:  # below the estimator's priority: under contention the kernel favours it
        os.nice(WEB_NICE)
    except OSError:
        pass
    try:
        info = link.wait_ready()
    except BaseException:
        sock.close()
        link.shutdown(timeout_s=10)
        raise
    state = ServiceState(info, settings.dashboard)
    recording = None
    if config.mcap:  # written here, off the estimator process (mcap_recording.py)
        recording = McapRecording(run_dir / ONLINE_FOLDER / ONLINE_MCAP, info["joint_names"])
    clients = ClientQueues(settings.dashboard.client_queue, settings.dashboard.client_timeout_s)
    token = None if settings.loopback else secrets.token_urlsafe(18)
    app = web_app.build_app(state, clients, link.commands.put, token)
    server = uvicorn.Server(
        uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=3
        )
    )
    reader = threading.Thread(target=_read_frames, args=(link, state, recording), daemon=True)
    reader.start()
    port = sock.getsockname()[1]
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    url = f"http://{host}:{port}/"
    stream = info["stream"]
    print(
        f"online service for {info['robot']} ({stream['source']} at {info['rate_hz']:g} Hz, "
        f"{info['n_base']} base parameters from {info['initial']}; filter delay "
        f"{1e3 * info['filter']['delay_s']:.0f} ms): open {url}",
        flush=True,
    )
    if token is not None:
        print(
            f"listening beyond loopback ({settings.host}): reset/snapshot/stop need the header "
            f"X-Token: {token}",
            flush=True,
        )
    print("Ctrl-C stops the service and saves the run directory.", flush=True)
    previous = signal.signal(signal.SIGTERM, _raise_stop)
    try:
        # uvicorn catches SIGINT / SIGTERM while serving and re-raises them once it stopped
        asyncio.run(_serve(server, sock, state, clients, settings.dashboard.publish_hz))
    except (KeyboardInterrupt, _Stop):
        print("stopping: saving the run directory", flush=True)
    finally:
        signal.signal(signal.SIGTERM, previous)
    link.shutdown()
    reader.join(timeout=10)
    if recording is not None:
        written = recording.close()
        counts = written["messages"]
        print(
            f"{written['path']}: {counts['states']} joint states, {counts['torque']} torques, "
            f"{counts['events']} events ({counts['drift']} drift)"
            + (f"; writing failed: {written['error']}" if written["error"] else ""),
            flush=True,
        )
    if link.error is not None:
        if link.internal:
            raise RuntimeError(f"the estimator process failed:\n{link.error}")
        raise UserError(link.error)
    if link.final is None:
        raise RuntimeError("the estimator process ended without its final summary")
    return link.final


class _Stop(Exception):
    """SIGTERM, after uvicorn has stopped serving."""


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop


def _read_frames(
    link: EstimatorLink, state: ServiceState, recording: McapRecording | None = None
) -> None:
    """Move the estimator's messages into the state (and the recording's rows to the MCAP
    writer) until its final summary or error."""
    while True:
        try:
            message = link.outbox.get(timeout=0.5)
        except queue.Empty:
            if not link.process.is_alive():
                state.end(None, "the estimator process ended")
                return
            continue
        kind = message["kind"]
        if kind == "frame":
            record = message.pop("record", None)  # never to the dashboard's clients
            if recording is not None:
                recording.put(record, message["events"])
            state.ingest(message)
        elif kind == "record" and recording is not None:
            recording.put(message["record"], message["events"])
        elif kind == "final":
            link.final = message["summary"]
            state.end(message["summary"])
            return
        elif kind == "error":
            link.error, link.internal = message["message"], bool(message.get("internal"))
            state.end(None, message["message"])


async def _serve(
    server: Any, sock: socket.socket, state: ServiceState, clients: ClientQueues, rate: float
) -> None:
    from ident_framework.online.web_app import sse_frame

    sequence = itertools.count()

    async def broadcast() -> None:
        period = 1.0 / rate
        while not server.should_exit:
            await asyncio.sleep(period)
            frames = state.take_pending()
            if frames:
                frame = merge_frames(frames)
                frame["seq"] = next(sequence)  # the clients' sequence: a gap is a dropped frame
                clients.offer(sse_frame(frame))  # encoded once, shared
            if state.status != "running":
                server.should_exit = True
        for client in list(clients.clients.values()):  # end the event streams: shutdown
            clients.remove(client)
            if client.queue.full():
                client.queue.get_nowait()
            client.queue.put_nowait(None)

    task = asyncio.create_task(broadcast())
    try:
        await server.serve(sockets=[sock])
    finally:
        server.should_exit = True
        await task
