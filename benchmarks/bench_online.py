"""mode=online measured: sustained real time, CPU, latency, slow clients, drift, convergence,
RTDE. Prints figures and ratios. Run when the machine is quiet (`uptime`):

    python benchmarks/bench_online.py [--minutes 10] [--parts sustained,realtime,clients,
                                       drift,convergence,rtde] [--out DIR]

- sustained: `--minutes` of the 500 Hz simulated stream as fast as possible: skipped updates
  (target 0), drift alarms in the steady run (target 0), wall time;
- realtime: 60 s at real time: CPU share of one core, latency sample -> a-priori prediction
  and -> updated estimate (median, p99; target p99 < 2 ms);
- clients: the same with a client that never reads, and with ten reading clients: updates and
  p99 against the baseline (target within 10 %);
- drift: payload 1.5 -> 3.5 kg at 60 s: detection delay, time until the sliding pooled R² is
  back within 1 % of its pre-change value;
- convergence: a recording replayed (`source=csv`); the streaming estimate's RMSE on a held-out
  validation recording over time, against the batch `ls` estimate of the same recording;
- rtde: 60 s against the RTDE emulator: dropped samples, online vs recording mode.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
FAST = ["trajectory.n_candidates=200", "trajectory.n_refine=500", "trajectory.progress=false"]
EXTRA: list[str] = []  # --override KEY=VALUE: added to every online run


def cli(run: Path, *overrides: str, timeout: float = 7200) -> dict:
    command = [
        sys.executable,
        "-m",
        "ident_framework",
        "mode=online",
        *FAST,
        *overrides,
        *EXTRA,
        f"hydra.run.dir={run}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        raise SystemExit(f"failed: {' '.join(command)}\n{done.stdout}\n{done.stderr}")
    return json.loads((run / "online" / "summary.json").read_text())


def latency(summary: dict) -> str:
    p, u = summary["latency_prediction"], summary["latency_update"]
    return (
        f"prediction median {p['median_ms']:.3f} ms p99 {p['p99_ms']:.3f} ms; "
        f"update median {u['median_ms']:.3f} ms p99 {u['p99_ms']:.3f} ms"
    )


def sustained(out: Path, minutes: float) -> None:
    s = cli(
        out / "sustained",
        "online.time_factor=null",
        f"online.duration_s={60 * minutes:g}",
        "online.twin.every_s=30",
    )
    print(
        f"[sustained] {minutes:g} min of source time in {s['wall_s']:.0f} s wall "
        f"({60 * minutes / s['wall_s']:.1f}x real time): updates {s['updates']}, skipped "
        f"{s['skipped_updates']}, drift alarms {len(s['drift_events'])}, twin updates "
        f"{s['twin_updates']}; {latency(s)}"
    )


def service_with_clients(
    run: Path, seconds: float, stalled: int, readers: int, *extra: str
) -> dict:
    import httpx

    from online_support import running_service

    with running_service(
        run,
        "online.time_factor=1",
        f"online.duration_s={seconds:g}",
        "online.twin.every_s=30",
        *extra,
    ) as service:
        host, port = service.url.split("//")[1].rstrip("/").split(":")
        sockets, stop = [], threading.Event()
        for _ in range(stalled):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
            s.connect((host, int(port)))
            s.sendall(f"GET /events HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            sockets.append(s)

        def read() -> None:
            with httpx.stream("GET", service.url + "events", timeout=None) as response:
                for _ in response.iter_lines():
                    if stop.is_set():
                        return

        threads = [threading.Thread(target=read, daemon=True) for _ in range(readers)]
        for t in threads:
            t.start()
        service.wait(seconds + 300)
        stop.set()
        for s in sockets:
            s.close()
    return json.loads((run / "online" / "summary.json").read_text())


def realtime_and_clients(out: Path, clients: bool, priority: int | None) -> None:
    extra = () if priority is None else (f"online.realtime_priority={priority}",)
    tag = "normal scheduling" if priority is None else f"SCHED_FIFO {priority}"
    out = out / tag.replace(" ", "_")
    base = service_with_clients(out / "rt", 60, 0, 0, *extra)
    print(
        f"[realtime, {tag}] 60 s at real time: CPU "
        f"{100 * base['cpu_share_of_one_core']:.1f} % of one core, updates {base['updates']}, "
        f"skipped {base['skipped_updates']}; {latency(base)}"
    )
    if not clients:
        return
    for name, stalled, readers in (("never-reading client", 1, 0), ("ten clients", 0, 10)):
        s = service_with_clients(out / name.replace(" ", "_"), 60, stalled, readers, *extra)
        ratio_u = s["updates"] / base["updates"]
        ratio_p = s["latency_update"]["p99_ms"] / base["latency_update"]["p99_ms"]
        print(
            f"[clients, {tag}] {name}: updates {s['updates']} ({ratio_u:.3f} x baseline), skipped "
            f"{s['skipped_updates']}, update p99 {s['latency_update']['p99_ms']:.3f} ms "
            f"({ratio_p:.2f} x baseline); {latency(s)}"
        )


def drift(out: Path) -> None:
    run = out / "drift"
    s = cli(
        run,
        "online.time_factor=null",
        "online.duration_s=120",
        "online.twin.every_s=null",
        "online.parameters_every_s=0.05",
        "online.payload_change={t_s: 60.0, mass_kg: 3.5}",
    )
    rows = np.genfromtxt(run / "online" / "parameters.csv", delimiter=",", names=True)
    t, r2 = rows["t_s"], rows["pooled_r2"]
    delay = 0.025  # filter delay (s): an event at centre time t was seen at t + delay
    events = [e for e in s["drift_events"] if e["t"] >= 50]
    before = r2[(t > 50) & (t < 60)].mean()
    after = t[(t > 60) & (np.abs(r2 - before) <= 0.01 * abs(before))]
    back = None
    for k in np.flatnonzero(t > 60):
        if np.all(np.abs(r2[k : k + 20] - before) <= 0.01 * abs(before)):
            back = t[k] - 60.0
            break
    false = [e for e in s["drift_events"] if e["t"] < 60]
    print(
        f"[drift] payload 1.5 -> 3.5 kg at 60 s: detected at "
        f"{events[0]['t'] + delay - 60.0:.3f} s after the change (joint "
        f"{events[0]['joint'] + 1})"
        if events
        else "[drift] NOT detected",
        end="",
    )
    print(
        f"; sliding pooled R² before {before:.5f}, lowest after {r2[t > 60].min():.5f}, back "
        f"within 1 % (for 1 s) {back if back is None else f'{back:.2f} s'} after the change; "
        f"false alarms before it {len(false)}; samples {len(after)}"
    )


def convergence(out: Path) -> None:
    """Identification and validation recordings of the simulated robot; batch ls vs streaming."""
    from hydra import compose, initialize_config_dir

    from ident_framework.identification import predict_torque
    from ident_framework.metrics import torque_metrics  # noqa: F401
    from ident_framework.online.sample_regressor import structural_base
    from ident_framework.pipeline import robot_and_regressor
    from ident_framework.plugins import get_registry
    from ident_framework.preprocessing import PreprocessingParams, preprocess
    from ident_framework.run_config import validate_config

    from test_online_service import write_recording  # noqa: F401

    folder = out / "convergence"
    folder.mkdir(parents=True, exist_ok=True)
    train, val = folder / "train.csv", folder / "validation.csv"
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base=None):
        cfg = compose("config", overrides=FAST)
    config = validate_config(cfg, get_registry())
    robot, builder = robot_and_regressor(config)
    from ident_framework.pipeline import design_excitation
    from ident_framework.source_mujoco import MujocoSource

    source = config.plugins["source"].create()
    excitation = design_excitation(config, robot, builder, config.seed)
    ident = source.acquire(robot, excitation, "identification")
    motion = config.validation.trajectory.create().generate(robot, None, config.seed + 1)
    validation = MujocoSource(config.validation.source.params).acquire(robot, motion, "validation")
    n = robot.n_joints
    for path, data in ((train, ident), (val, validation)):
        header = [
            "timestamp",
            *[f"actual_q_{j}" for j in range(n)],
            *[f"actual_qd_{j}" for j in range(n)],
            *[f"actual_current_as_torque_{j}" for j in range(n)],
        ]
        np.savetxt(
            path,
            np.column_stack([data.timestamp, data.q, data.dq, data.tau]),
            delimiter=",",
            header=",".join(header),
            comments="",
            fmt="%.10g",
        )
    ls_run = folder / "ls"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ident_framework",
            "source=csv",
            f"source.path={train}",
            "validation=csv",
            f"validation.path={val}",
            f"hydra.run.dir={ls_run}",
            "plots=false",
        ],
        check=True,
        capture_output=True,
    )
    import yaml

    reported = json.loads((ls_run / "metrics.json").read_text())["validation"]["physical"]["rmse"]
    ls_theta = np.array(
        list(
            yaml.safe_load((ls_run / "parameters.yaml").read_text())["standard_parameters"].values()
        )
    )
    online_run = folder / "online"
    cli(
        online_run,
        "source=csv",
        f"source.path={train}",
        "online.time_factor=null",
        "online.twin.every_s=null",
        "online.parameters_every_s=1",
    )
    base = structural_base(
        builder,
        config.online.estimator.structural_samples,
        config.base_parameters.tolerance,
        config.base_parameters.method,
        seed=config.seed,
    )
    held_out = preprocess(validation, PreprocessingParams())
    rows = np.genfromtxt(online_run / "online" / "parameters.csv", delimiter=",", skip_header=1)
    ls_pred = predict_torque(builder, held_out, ls_theta, 2000)
    ls_rmse = float(
        np.sqrt(np.mean((ls_pred - validation.tau[held_out_rows(validation, held_out)]) ** 2))
    )
    print(
        f"[convergence] batch ls held-out RMSE {ls_rmse:.4f} Nm (metrics.json: {reported:.4f}; "
        "validation motion, torque as recorded); the streaming estimate over the replay:"
    )
    for row in rows[:: max(1, len(rows) // 12)].tolist() + [rows[-1].tolist()]:
        theta = base.to_standard(np.array(row[6:]))
        predicted = predict_torque(builder, held_out, theta, 2000)
        recorded = validation.tau[held_out_rows(validation, held_out)]
        rmse = float(np.sqrt(np.mean((predicted - recorded) ** 2)))
        print(f"    t = {row[0]:7.1f} s: RMSE {rmse:.4f} Nm, ratio to ls {rmse / ls_rmse:.3f}")
    _ = (os, signal, tempfile, time)


def held_out_rows(recorded, processed) -> np.ndarray:
    """Rows of the recording that preprocessing kept (it trims the filter edges)."""
    return np.searchsorted(recorded.timestamp, processed.timestamp)


def rtde(out: Path) -> None:
    from rtde_support import running_emulator

    host = "127.0.16.1"
    with running_emulator(host):
        s = cli(
            out / "rtde_online",
            "source=rtde",
            f"source.host={host}",
            "online.duration_s=60",
            "online.twin.every_s=30",
        )
    from ident_framework.robot_model import load_robot
    from ident_framework.source_rtde import RtdeSource, RtdeSourceParams

    with running_emulator(host):  # the recorder of source=rtde (dry run: it only listens)
        params = RtdeSourceParams(
            host=host, duration_s=60.0, recording_path=str(out / "rtde_record.csv")
        )
        data = RtdeSource(params).acquire(load_robot("ur12e"), None)
    acq = {
        k: data.metadata["acquisition"][k]
        for k in ("samples_written", "samples_expected", "dropped_samples", "dropped_fraction")
    }
    st = s["stream"]
    print(
        f"[rtde] online 60 s: {st['samples_written']} of {st['samples_expected']} samples, "
        f"dropped {st['dropped_samples']} ({100 * (st['dropped_fraction'] or 0):.2f} %), updates "
        f"{s['updates']}, skipped {s['skipped_updates']}; {latency(s)}"
    )
    print(f"[rtde] recording mode 60 s: {acq}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--parts", default="sustained,realtime,clients,drift,convergence,rtde")
    parser.add_argument("--out", default=None)
    parser.add_argument("--override", action="append", default=[], help="KEY=VALUE (repeat)")
    args = parser.parse_args()
    EXTRA.extend(args.override)
    out = Path(args.out or tempfile.mkdtemp(prefix="bench_online_"))
    parts = args.parts.split(",")
    print(f"load average {os.getloadavg()}; outputs in {out}", flush=True)
    if "sustained" in parts:
        sustained(out, args.minutes)
    if "realtime" in parts or "clients" in parts:
        for priority in (None, 10):
            realtime_and_clients(out, "clients" in parts, priority)
    if "drift" in parts:
        drift(out)
    if "rtde" in parts:
        rtde(out)
    if "convergence" in parts:
        convergence(out)


if __name__ == "__main__":
    main()
