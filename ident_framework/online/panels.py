"""The dashboard's panels, in one list: the page builds itself from it (`GET /api/panels`).

A panel is one ES module in `static/panels/`, exporting `create(element, ctx)` that returns
`{ render(view) }`, optionally with `resize()` and `maxFps` (the most it is redrawn per
second; default: at every new frame). `ctx` holds the kept history (`store`: trace, fit,
theta, events), the newest frame (`latest`), the service's description (`info`: robot, joints,
parameter names, stream, settings) and uPlot; `view` is the shared time window (`live`,
`tStart`, `tEnd`, `width`). `static/app.js` exports helpers (`markerPlugin`, `timeRange`,
`axisStyle`, `JOINT_COLORS`). To add a panel: write its module and add one `Panel` line below.
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
