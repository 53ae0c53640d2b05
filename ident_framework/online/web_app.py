"""The dashboard's web application (Starlette; served by uvicorn in `service.py`).

- `GET /` the page; `GET /static/...` its scripts, styles and uPlot;
- `GET /events` server-sent events: a JSON frame ~25 times a second (`t` s of source time,
  `tau_meas`, `tau_pred` Nm per joint, sliding `rmse`, `r2`, `events`, `seq`, `trace`, ...);
- `GET /api/state` (the latest frame and counters), `/api/history?seconds=S`, `/api/panels`,
  `/api/info`;
- `POST /api/reset`, `/api/snapshot`, `/api/stop`: need `X-Requested-With: ident-online` and,
  beyond loopback, `X-Token: <the token printed at start>`.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from importlib import resources
from typing import Any

from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ident_framework.online.client_queues import ClientQueues
from ident_framework.online.panels import panel_list
from ident_framework.online.service_state import ServiceState
from ident_framework.plain_data import to_plain

COMMANDS = ("reset", "snapshot", "stop")
CSRF_HEADER = ("x-requested-with", "ident-online")


def encode(document: Any) -> str:
    return json.dumps(to_plain(document), separators=(",", ":"))


def sse_frame(document: Any) -> bytes:
    """`document` as one server-sent event (`data: <JSON>`), encoded once for every client."""
    return ServerSentEvent(data=encode(document)).encode()


def events_endpoint(state: ServiceState, clients: ClientQueues) -> Any:
    """GET /events: each client its own bounded queue (`client_queues.py`)."""

    async def events(request: Request) -> Response:
        client = clients.add()

        async def stream():
            try:
                yield {
                    "event": "hello",
                    "data": encode({"client": client.id, "status": state.status}),
                }
                while not client.closed:
                    try:
                        payload = await asyncio.wait_for(client.queue.get(), 1.0)
                    except TimeoutError:
                        continue
                    if payload is None:
                        break
                    client.sent += 1
                    yield payload  # bytes shared by all clients (`sse_frame`)
            finally:
                clients.remove(client)

        return EventSourceResponse(
            stream(),
            ping=10,
            send_timeout=clients.timeout_s,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    return events


def command_endpoint(state: ServiceState, send_command, token: str | None) -> Any:
    """POST /api/{reset,snapshot,stop}: the CSRF header always, the token when one is set."""

    async def command(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in COMMANDS:
            return JSONResponse({"error": f"unknown command {name}"}, status_code=404)
        if request.headers.get(CSRF_HEADER[0]) != CSRF_HEADER[1]:
            error = f"state-changing requests need the header {CSRF_HEADER[0]}: {CSRF_HEADER[1]}"
            return JSONResponse({"error": error}, status_code=403)
        if token is not None and not hmac.compare_digest(request.headers.get("x-token", ""), token):
            return JSONResponse({"error": "missing or wrong X-Token"}, status_code=401)
        if state.status != "running":
            return JSONResponse({"error": f"the service has {state.status}"}, status_code=409)
        send_command({"cmd": name})
        return JSONResponse({"ok": True, "command": name})

    return command


def build_app(
    state: ServiceState, clients: ClientQueues, send_command, token: str | None
) -> Starlette:
    """send_command(dict) forwards a command to the estimator process."""
    static = str(resources.files("ident_framework.online") / "static")

    async def index(request: Request) -> Response:
        return FileResponse(f"{static}/index.html", headers={"Cache-Control": "no-store"})

    async def api_state(request: Request) -> Response:
        document = state.state()
        document["clients"] = clients.summary()
        return Response(encode(document), media_type="application/json")

    async def api_history(request: Request) -> Response:
        seconds = request.query_params.get("seconds")
        try:
            window = float(seconds) if seconds is not None else None
        except ValueError:
            return JSONResponse({"error": "seconds must be a number"}, status_code=400)
        return Response(encode(state.history(window)), media_type="application/json")

    async def api_info(request: Request) -> Response:
        info = {**state.info, "protected": token is not None}
        return Response(encode(info), media_type="application/json")

    async def api_panels(request: Request) -> Response:
        return JSONResponse(panel_list())

    routes = [
        Route("/", index),
        Route("/events", events_endpoint(state, clients)),
        Route("/api/state", api_state),
        Route("/api/history", api_history),
        Route("/api/info", api_info),
        Route("/api/panels", api_panels),
        Route("/api/{name}", command_endpoint(state, send_command, token), methods=["POST"]),
        Mount("/static", StaticFiles(directory=static), name="static"),
    ]
    return Starlette(routes=routes)
