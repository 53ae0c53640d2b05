"""Shared helpers of the FIGAROH drivers (run in FIGAROH's own venv: numpy, pandas, pyyaml and
figaroh only; nothing of ident_framework). Adapted from `../shared/peers/figaroh/common.py`
(the lead's example driver): contract CSV loading for any joint count, stage timers, peak RSS,
prediction CSV and JSON writers."""

from __future__ import annotations

import json
import resource
import time

import numpy as np
import pandas as pd

CONTRACT_COLUMNS = {
    "time": "timestamp", "q": "actual_q_", "dq": "actual_qd_", "tau": "actual_current_as_torque_",
}  # fmt: skip


def parse_columns(text: str | None) -> dict[str, str]:
    """'time=time,q=q_,dq=dq_,tau=tau_' -> the column names (time) and prefixes (q, dq, tau);
    None: the contract's."""
    columns = dict(CONTRACT_COLUMNS)
    for part in filter(None, (text or "").split(",")):
        key, _, value = part.partition("=")
        if key not in columns or not value:
            raise ValueError(f"--columns: '{part}' is not one of {list(columns)}=NAME")
        columns[key] = value
    return columns


def load_contract_csv(
    path: str, n_joints: int, columns: dict[str, str] | None = None
) -> dict[str, np.ndarray]:
    """CSV -> {"t", "q", "dq", "tau"}: by default ident_framework's contract (timestamp,
    actual_q_j, actual_qd_j, actual_current_as_torque_j); `columns` maps time, q, dq, tau to a
    file's own names (time) and prefixes (the others, joint index appended). Extra columns are
    ignored."""
    names = columns or CONTRACT_COLUMNS
    frame = pd.read_csv(path)
    t = frame[names["time"]].to_numpy(float)
    if len(t) < 2 or np.any(np.diff(t) <= 0):
        raise ValueError(f"{path}: timestamps must be strictly increasing (at least 2 rows)")

    def block(prefix: str) -> np.ndarray:
        return frame[[f"{prefix}{j}" for j in range(n_joints)]].to_numpy(float)

    return {"t": t, "q": block(names["q"]), "dq": block(names["dq"]), "tau": block(names["tau"])}


def concatenate_recordings(recordings: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Several recordings end to end, each later one's time shifted to start one median step
    after the previous one ends (FIGAROH takes one trajectory: its filters then run across
    the seams)."""
    joined = dict(recordings[0])
    for part in recordings[1:]:
        step = float(np.median(np.diff(part["t"])))
        t = part["t"] - part["t"][0] + joined["t"][-1] + step
        joined = {"t": np.concatenate([joined["t"], t])} | {
            key: np.vstack([joined[key], part[key]]) for key in ("q", "dq", "tau")
        }
    return joined


def estimate_fs(t: np.ndarray) -> float:
    """Nominal sampling rate (Hz) from the median timestamp step (robust to jitter)."""
    return float(round(1.0 / float(np.median(np.diff(t))), 3))


def write_predictions(path: str, t: np.ndarray, tau: np.ndarray) -> None:
    """timestamp, tau_pred_0..n-1."""
    frame = pd.DataFrame({"timestamp": np.asarray(t).reshape(-1)})
    for j in range(tau.shape[1]):
        frame[f"tau_pred_{j}"] = tau[:, j]
    frame.to_csv(path, index=False, float_format="%.10g")


def peak_rss_mb() -> float:
    """Peak resident set size of this process (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class Timer:
    """Accumulating wall-clock timers (s) around named steps."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, label: str, seconds: float) -> None:
        self.seconds[label] = self.seconds.get(label, 0.0) + seconds

    def wrap(self, owner, name: str) -> None:
        """Replace owner.name by a timed wrapper (skipped when it does not exist)."""
        function = getattr(owner, name, None)
        if function is None:
            return
        timer = self

        def wrapped(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                timer.add(name, time.perf_counter() - start)

        setattr(owner, name, wrapped)


def validation_prediction(ident, joints: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(t, tau (N, n)) of FIGAROH's own held-out prediction with the identified base
    parameters (result["validation_metrics"], computed by solve() on validation_data_file)."""
    metrics = ident.result.get("validation_metrics")
    if metrics is None or metrics.get("validation_source") != "validation_data":
        raise RuntimeError("FIGAROH did not load the validation data (no held-out prediction)")
    per_joint = metrics["tau_identified_per_joint"]
    tau = np.column_stack([np.asarray(per_joint[j]) for j in joints])
    t = np.asarray(ident._val_processed_data["timestamps"], float).reshape(-1)
    return t, tau


def dump(path: str, values: dict) -> None:
    def plain(value):
        return value.tolist() if hasattr(value, "tolist") else str(value)

    with open(path, "w", encoding="utf-8") as handle:
        json.dump(values, handle, indent=1, default=plain)
