"""The lines mode=online prints when it ends."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ident_framework.reports.run_files import TWIN_MJCF


def print_online_summary(summary: dict[str, Any], run_dir: Path) -> float:
    """Print the summary; returns the sliding pooled RMSE (Nm) for sweepers (nan if none)."""
    pred, upd = summary["latency_prediction"], summary["latency_update"]
    sliding = summary["sliding"]
    r2 = sliding.get("r2") or []
    drifts = summary["drift_events"]
    cpu, source = summary.get("estimator_cpu_share"), summary.get("source_cpu_share")
    lines = [
        f"online run ended ({summary['stop_reason']}) after {summary['wall_s']:.1f} s "
        f"(source time {summary['t_end_s'] or 0.0:.1f} s)",
        f"samples received {summary['samples_received']}, estimator updates "
        f"{summary['updates']}, skipped updates {summary['skipped_updates']}, joint rows "
        f"held at low speed {100 * summary.get('held_row_share', 0.0):.1f} %"
        + (f", estimator CPU {100 * cpu:.0f} % of one core" if cpu is not None else "")
        + (f" (the stream's own: {100 * source:.0f} %)" if source else ""),
        f"latency sample -> a-priori prediction median {pred['median_ms']:.3f} ms, p99 "
        f"{pred['p99_ms']:.3f} ms; -> updated estimate median {upd['median_ms']:.3f} ms, p99 "
        f"{upd['p99_ms']:.3f} ms",
        "sliding R² per joint "
        + " ".join("-" if v is None else f"{v:.4f}" for v in r2)
        + ("" if sliding.get("pooled_r2") is None else f" (pooled {sliding['pooled_r2']:.4f})"),
        f"drift events {len(drifts)}"
        + (
            ": " + ", ".join(f"joint {e['joint'] + 1} at {e['t']:.2f} s" for e in drifts[:6])
            if drifts
            else ""
        ),
        f"twin updates {summary['twin_updates']}"
        + (
            f", last valid at {summary['twin_last']['t']:.1f} s"
            if summary.get("twin_last") and summary["twin_last"].get("valid")
            else ""
        ),
        f"outputs in {run_dir} (online/parameters.csv, online/events.jsonl, parameters.yaml"
        + (f", {TWIN_MJCF})" if (run_dir / TWIN_MJCF).exists() else ")"),
    ]
    print("\n".join(lines), flush=True)
    rmse = summary["sliding"].get("rmse") or []
    values = [v for v in rmse if v is not None]
    return math.sqrt(sum(v * v for v in values) / len(values)) if values else float("nan")
