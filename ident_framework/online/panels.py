"""The dashboard's panels, in one list: the page builds itself from it (`GET /api/panels`).

A panel is an ES module in `static/panels/` exporting `create(element, ctx)` -> `{ render(view)
}` (optional: `resize()`, `maxFps`). `ctx`: `store` (trace, fit, theta, events), `latest`
(frame), `info`, uPlot; `view`: the shared time window (`live`, `tStart`, `tEnd`, `width`).
Helpers are in `static/app.js`. To add a panel: write its module and add a `Panel` below.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Panel:
    """id: DOM id; title: shown above it; module: file in static/panels/; span: grid columns
    it takes (of 3); rows: grid rows (of the dashboard's rows)."""

    id: str
    title: str
    module: str
    span: int = 1
    rows: int = 1


PANELS = (
    Panel(
        "torque",
        "Joint torque: measured (as recorded) vs a-priori prediction",
        "torque.js",
        span=2,
        rows=2,
    ),
    Panel("status", "Service", "status.js"),
    Panel("twin", "Digital twin", "twin.js"),
    Panel("fit", "Sliding fit per joint (R² and RMSE)", "fit.js", span=2),
    Panel("events", "Events", "events.js"),
    Panel("convergence", "Parameter convergence", "convergence.js", span=2),
    Panel("drift", "Drift detector (CUSUM / threshold)", "drift.js"),
)


def panel_list() -> list[dict]:
    return [asdict(panel) for panel in PANELS]
