"""mode=online measured: what issue 15 asks to show, each part through the real CLI.

    python benchmarks/bench_online.py [--parts PART,...] [--minutes 10] [--realtime-s 60]
                                      [--schedulings slice,noslice,fifo10] [--rounds 3]
                                      [--method rls|sliding_ls] [--out DIR] [--override K=V]
                                      [--emulator-priority 10]

Run it when the machine is quiet (`uptime`); the load average is printed first.
- sustained: `--minutes` of the 500 Hz simulated stream at `--time-factor` (1: real time; 2:
  twice as fast; null: as fast as possible; samples are due at their time, so falling behind
  by more than online.max_lag_s skips updates), with a twin fit every 30 s: updates, skipped
  updates (target 0), joint rows held at low speed, drift alarms in this steady run (false
  alarms, target 0), CPU, latency;
- realtime: `--realtime-s` at real time for each of `--schedulings` (slice: the default, normal
  scheduling with online.scheduler_slice_ms=0.1; noslice: the kernel's own slice; fifo10:
  SCHED_FIFO 10, needs privileges): the estimator's
  CPU share of one core (without the simulated robot's physics; the process's total too),
  latency sample -> a-priori prediction and -> updated estimate, median and p99 (target
  p99 < 2 ms);
- clients: the same with a client that never reads and with ten reading clients (one process
  of their own, `sse_clients.py`: one connection each, reading every frame as a browser does;
  `--client-nice` lowers its priority), interleaved with the baseline over `--rounds` rounds (a
  shared machine's load drifts): the medians of updates and update p99 against the baseline's
  (target: within 10 %), and the CPU of the web process, the estimator process and the
  clients' own process in the same runs;
- drift: payload 1.5 -> 3.5 kg at 60 s of a 120 s run: detection delay, and per joint and pooled
  the sliding R² after the change against its pre-change value, i.e. that of the same run
  without the change at the same instant: its lowest, and from when it stays no more than 1 %
  below it (to the end of the run); false alarms before the change and in the run without it;
- convergence: an identification recording of the simulated robot replayed (`source=csv`) from
  the nominal model; the streaming estimate's RMSE on a held-out validation recording (another
  motion) over time, against batch `ls` on the same recording scored the same way;
- mcap: mcap=true, `--mcap-minutes` as fast as possible (the web process's memory over the
  run, the file's size) and `--realtime-s` at real time with and without it over `--rounds`
  (estimator CPU and update p99, web process CPU);
- rtde: 60 s of `source=rtde` against `python -m ident_framework.rtde.emulator` (real ur_rtde
  client): samples lost, against the recorder of `source=rtde` on the same emulator, and where
  they went (what ur_rtde's receive interface missed, how many of those our own connection
  filled, rows without torque, the packages the emulator itself skipped because it was late,
  and the recording against every package a reference connection received in a process of
  its own: never sent inside the recording's span, sent but not recorded;
  `--emulator-priority 10` runs it with SCHED_FIFO, like a controller's real-time loop).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
FAST = ["trajectory.n_candidates=200", "trajectory.n_refine=500", "trajectory.progress=false"]
EXTRA: list[str] = []  # --method and --override: added to every online run
CLIENT_NICE = 0  # --client-nice: the clients' process (0: like a browser on this computer)
EMULATOR_PRIORITY: int | None = None  # --emulator-priority: SCHED_FIFO level of the emulator
PARTS = ("sustained", "realtime", "clients", "drift", "convergence", "rtde", "mcap")


def online_cli(run: Path, *overrides: str, timeout: float = 7200) -> dict:
    """One `mode=online` run to its end; its online/summary.json."""
    command = [sys.executable, "-m", "ident_framework", "mode=online", *FAST, *overrides]
    command += [*EXTRA, f"hydra.run.dir={run}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        raise SystemExit(f"failed: {' '.join(command)}\n{done.stdout}\n{done.stderr}")
    return json.loads((run / "online" / "summary.json").read_text())


def latency(summary: dict) -> str:
    p, u = summary["latency_prediction"], summary["latency_update"]
    return (
        f"latency -> prediction median {p['median_ms']:.3f} ms, p99 {p['p99_ms']:.3f} ms; "
        f"-> updated estimate median {u['median_ms']:.3f} ms, p99 {u['p99_ms']:.3f} ms "
        f"(max {u['max_ms']:.1f} ms)"
    )


def parameter_rows(run: Path) -> np.ndarray:
    return np.genfromtxt(run / "online" / "parameters.csv", delimiter=",", names=True)


# ---------------------------------------------------------------------- sustained
def sustained(out: Path, minutes: float, time_factor: float | None, priority: int | None) -> None:
    extra = () if priority is None else (f"online.realtime_priority={priority}",)
    factor = "null" if time_factor is None else f"{time_factor:g}"
    s = online_cli(
        out / "sustained",
        f"online.time_factor={factor}",
        f"online.duration_s={60 * minutes:g}",
        "online.twin.every_s=30",
        *extra,
    )
    alarms = [f"joint {e['joint'] + 1} at {e['t']:.1f} s" for e in s["drift_events"]]
    print(
        f"[sustained] {minutes:g} min of source time at time factor "
        f"{'as fast as possible' if time_factor is None else factor} "
        f"({s['scheduling']}) in {s['wall_s']:.0f} s wall "
        f"({60 * minutes / s['wall_s']:.2f}x real time): updates {s['updates']} of "
        f"{s['samples_received']} samples (the filter's first 24 fill its window), skipped "
        f"{s['skipped_updates']}, joint rows held at low speed "
        f"{100 * s.get('held_row_share', 0.0):.1f} %, drift alarms {len(alarms)} (steady robot: "
        f"false alarms){': ' + ', '.join(alarms[:10]) if alarms else ''}, twin updates "
        f"{s['twin_updates']}; estimator CPU "
        f"{100 * s['estimator_cpu_share']:.1f} % of one core (process "
        f"{100 * s['cpu_share_of_one_core']:.1f} %, simulated robot "
        f"{100 * s['source_cpu_share']:.1f} %); {latency(s)}",
        flush=True,
    )


# ---------------------------------------------------------------------- real time, clients
def process_cpu_s(pid: int) -> float:
    """CPU time (s, user + system) of process `pid` so far (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_pids(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def service_with_clients(run: Path, seconds: float, stalled: int, readers: int, *extra) -> dict:
    """The service at real time for `seconds` with `stalled` clients that connect to /events
    and never read, and `readers` clients that read every frame: all of them one process
    (`sse_clients.py`, one connection per client, at CLIENT_NICE). Returns summary.json with
    `cpu_shares`: the web process's, the estimator process's (simulated robot included) and
    the clients' own, in shares of one core over the same middle part of the run."""
    from ident_framework.testing.cli import running_service

    overrides = ("online.time_factor=1", f"online.duration_s={seconds:g}", *extra)
    with running_service(run, "online.twin.every_s=30", *overrides) as service:
        clients = None
        if stalled or readers:
            command = [sys.executable, str(Path(__file__).with_name("sse_clients.py"))]
            command += [service.url, str(readers), f"--stalled={stalled}"]
            command.append(f"--nice={CLIENT_NICE}")
            clients = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        web = service.process.pid
        estimator = max(child_pids(web), key=process_cpu_s, default=None)
        window = 0.7 * seconds
        watched = {"web": web, "estimator": estimator}
        if clients is not None:
            watched["clients"] = clients.pid
        watched = {k: v for k, v in watched.items() if v is not None}
        time.sleep(0.15 * seconds)
        marks = {name: process_cpu_s(pid) for name, pid in watched.items()}
        wall0 = time.perf_counter()
        time.sleep(window)
        shares = {
            name: (process_cpu_s(pid) - marks[name]) / (time.perf_counter() - wall0)
            for name, pid in watched.items()
        }
        service.wait(seconds + 300)
        frames = None
        if clients is not None:
            try:
                out, _ = clients.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                clients.terminate()
                out, _ = clients.communicate(timeout=30)
            report = json.loads(out.strip().splitlines()[-1])
            frames = report["frames"]
    summary = json.loads((run / "online" / "summary.json").read_text())
    summary["cpu_shares"] = shares
    summary["client_frames"] = frames
    return summary


SCHEDULINGS = {  # --schedulings: name -> (label, overrides)
    "slice": ("normal scheduling, 0.1 ms slice (the default)", ()),
    "noslice": ("normal scheduling, kernel's slice", ("online.scheduler_slice_ms=null",)),
    "fifo10": ("SCHED_FIFO 10", ("online.realtime_priority=10",)),
}


def realtime_and_clients(
    out: Path, seconds: float, clients: bool, schedulings: list[str], rounds: int
) -> None:
    """The baseline and, with `clients`, a never-reading client and ten reading clients, for
    each scheduling, all interleaved over `rounds` rounds (the machine's own load drifts: each
    case's median over the rounds is compared with the same scheduling's baseline's)."""
    cases = (("baseline", 0, 0),)
    if clients:
        cases += (("never-reading client", 1, 0), ("ten clients", 0, 10))
    results = {(key, name): [] for key in schedulings for name, _, _ in cases}
    for k in range(rounds):
        for key in schedulings:
            tag, extra = SCHEDULINGS[key]
            for name, stalled, readers in cases:
                run = out / key / f"{name.replace(' ', '_')}_{k}"
                s = service_with_clients(run, seconds, stalled, readers, *extra)
                results[key, name].append(s)
                print(
                    f"[{'realtime' if name == 'baseline' else 'clients'}, {tag}, round {k + 1}] "
                    f"{name}: {seconds:g} s at real time ({s['scheduling']}), load "
                    f"{os.getloadavg()[0]:.1f}: estimator CPU "
                    f"{100 * s['estimator_cpu_share']:.1f} % of one core (process "
                    f"{100 * s['cpu_share_of_one_core']:.1f} %, of which the simulated robot "
                    f"{100 * s['source_cpu_share']:.1f} %); updates {s['updates']}, skipped "
                    f"{s['skipped_updates']}; {latency(s)}; {cpu_line(s)}",
                    flush=True,
                )
    for key in schedulings:
        tag = SCHEDULINGS[key][0]
        base = results[key, "baseline"]
        base_p99 = float(np.median([s["latency_update"]["p99_ms"] for s in base]))
        base_updates = float(np.median([s["updates"] for s in base]))
        for name, _, _ in cases:
            runs = results[key, name]
            p99 = float(np.median([s["latency_update"]["p99_ms"] for s in runs]))
            updates = float(np.median([s["updates"] for s in runs]))
            print(
                f"[clients, {tag}] {name}, median of {len(runs)}: updates {updates:.0f} "
                f"({updates / base_updates:.3f} x baseline), update p99 {p99:.3f} ms "
                f"({p99 / base_p99:.2f} x baseline); each round's p99 "
                f"{[round(s['latency_update']['p99_ms'], 3) for s in runs]} ms",
                flush=True,
            )


def cpu_line(s: dict) -> str:
    """The processes' CPU in the middle of the run, shares of one core (2 cores: 200 %)."""
    shares = ", ".join(f"{name} {100 * v:.1f} %" for name, v in s["cpu_shares"].items())
    frames = s.get("client_frames")
    if frames:
        shares += (
            f"; frames read per reading client {min(frames)}..{max(frames)} "
            f"(service sent {s['frames_sent']})"
        )
    return f"CPU of one core: {shares}"


# ---------------------------------------------------------------------- drift
def back_within(t: np.ndarray, r2: np.ndarray, ref: np.ndarray, t_change: float):
    """(lowest R² relative to `ref` after t_change, that relative gap, s after t_change from
    which R² >= 99 % of ref holds to the end of the run, or None). One-sided: a change can
    leave a joint's R² higher than before (a larger torque variance), which is no harm."""
    after = np.flatnonzero(t > t_change)
    gap = (r2 - ref) / np.abs(ref)
    worst = after[np.nanargmin(gap[after])]
    below = after[gap[after] < -0.01]
    if not below.size:
        return float(r2[worst]), float(gap[worst]), 0.0
    last = below[-1]
    if last == after[-1]:
        return float(r2[worst]), float(gap[worst]), None
    return float(r2[worst]), float(gap[worst]), float(t[last + 1] - t_change)


def drift(out: Path) -> None:
    """The run with the change and, as its pre-change value at every instant, the same run
    without it (same seed: identical up to the change). The looped excitation makes the sliding
    R² of a joint periodic (a joint that hardly moves in part of the loop has a low R² there),
    so the R² to come back to is the one the unchanged robot has at that instant."""
    t_change = 60.0
    common = (
        "online.time_factor=null",
        "online.duration_s=120",
        "online.twin.every_s=null",
        "online.parameters_every_s=0.05",
    )
    change = f"online.payload_change={{t_s: {t_change}, mass_kg: 3.5}}"
    s = online_cli(out / "drift", *common, change)
    steady = online_cli(out / "drift_reference", *common)
    rows, ref = parameter_rows(out / "drift"), parameter_rows(out / "drift_reference")
    t = rows["t_s"]
    if not (len(ref) == len(rows) and np.allclose(ref["t_s"], t)):
        raise SystemExit(
            f"[drift] the two runs' parameter rows differ in time: {t[-3:]}, {ref['t_s'][-3:]}"
        )
    delay = 0.024  # filter delay (s): a sample of centre time t is processed at t + delay
    false = [e for e in s["drift_events"] if e["t"] < t_change]
    hits = [e for e in s["drift_events"] if e["t"] >= t_change]
    if hits:
        first = hits[0]
        print(
            f"[drift] payload 1.5 -> 3.5 kg at {t_change:g} s: detected "
            f"{first['t'] + delay - t_change:.3f} s after the change (joint {first['joint'] + 1},"
            f" {first['joint_name']}; filter delay included), alarms after it "
            f"{[round(e['t'], 2) for e in hits]}; false alarms before it {len(false)}, in the "
            f"steady reference run {len(steady['drift_events'])}"
        )
    else:
        print(f"[drift] NOT detected; false alarms before the change {len(false)}")
    pre = (t > t_change - 10) & (t < t_change)
    n = sum(1 for name in rows.dtype.names if name.startswith("r2_"))
    columns = [("pooled", "pooled_r2")] + [(f"joint {j}", f"r2_{j}") for j in range(1, n + 1)]
    for label, column in columns:
        lowest, gap, back = back_within(t, rows[column], ref[column], t_change)
        print(
            f"    sliding R² {label}: mean of the 10 s before {np.nanmean(rows[column][pre]):.5f};"
            f" after the change lowest against the unchanged robot's at that instant: "
            f"{lowest:.5f} ({100 * gap:+.2f} %); back within 1 % of it to the end "
            + ("never" if back is None else f"{back:.2f} s after the change")
        )
    rmse = rows["pooled_rmse_Nm"]
    print(
        f"    sliding pooled RMSE: before {np.mean(rmse[pre]):.3f} Nm, highest after "
        f"{rmse[t > t_change].max():.3f} Nm, at 10 s after "
        f"{np.interp(t_change + 10, t, rmse):.3f} Nm (unchanged robot "
        f"{np.interp(t_change + 10, t, ref['pooled_rmse_Nm']):.3f} Nm)",
        flush=True,
    )


# ---------------------------------------------------------------------- convergence
def write_csv(path: Path, data) -> None:
    n = data.q.shape[1]
    header = ["timestamp"] + [f"actual_{k}_{j}" for k in ("q", "qd") for j in range(n)]
    header += [f"actual_current_as_torque_{j}" for j in range(n)]
    table = np.column_stack([data.timestamp, data.q, data.dq, data.tau])
    np.savetxt(path, table, delimiter=",", header=",".join(header), comments="", fmt="%.10g")


def convergence(out: Path) -> None:
    """Identification and validation recordings of the simulated robot (seeded as the CLI's);
    the streaming estimate over the replay vs batch ls, both scored on the validation motion
    against the torque as recorded."""
    from hydra import compose, initialize_config_dir

    from ident_framework.config.registry import get_registry
    from ident_framework.config.run_config import validate_config
    from ident_framework.data.preprocessing import PreprocessingParams, preprocess
    from ident_framework.identify.linear_problem import predict_torque
    from ident_framework.modes.pipeline import design_excitation, robot_and_regressor
    from ident_framework.online.sample_regressor import structural_base
    from ident_framework.sources.mujoco import MujocoSource

    folder = out / "convergence"
    folder.mkdir(parents=True, exist_ok=True)
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base=None):
        cfg = compose("config", overrides=FAST)
    config = validate_config(cfg, get_registry())
    robot, builder = robot_and_regressor(config)
    excitation = design_excitation(config, robot, builder, config.seed)
    ident = config.plugins["source"].create().acquire(robot, excitation, "identification")
    motion = config.validation.trajectory.create().generate(robot, None, config.seed + 1)
    validation = MujocoSource(config.validation.source.params).acquire(robot, motion, "validation")
    train, val = folder / "train.csv", folder / "validation.csv"
    write_csv(train, ident)
    write_csv(val, validation)
    command = [sys.executable, "-m", "ident_framework", "source=csv", f"source.path={train}"]
    command += ["validation=csv", f"validation.path={val}", "plots=false"]
    # batch ls with the streaming estimator's model (tuning=none: the same columns and
    # preprocessing defaults), and with its own tuning (csv's default) for context
    ls_run, tuned_run = folder / "ls", folder / "ls_tuned"
    subprocess.run(
        [*command, "tuning=none", f"hydra.run.dir={ls_run}"], check=True, capture_output=True
    )
    subprocess.run([*command, f"hydra.run.dir={tuned_run}"], check=True, capture_output=True)
    reported = json.loads((ls_run / "metrics.json").read_text())["validation"]["physical"]["rmse"]
    tuned = json.loads((tuned_run / "metrics.json").read_text())["validation"]["physical"]["rmse"]
    standard = yaml.safe_load((ls_run / "parameters.yaml").read_text())["standard_parameters"]
    ls_theta = np.array([standard[name] for name in builder.parameter_names])

    online_run = folder / "online"
    online_cli(
        online_run,
        "source=csv",
        f"source.path={train}",
        "online.time_factor=null",
        "online.twin.every_s=null",
        "online.parameters_every_s=0.5",
    )
    base = structural_base(
        builder,
        config.online.estimator.structural_samples,
        config.base_parameters.tolerance,
        config.base_parameters.method,
        seed=config.seed,
    )
    held_out = preprocess(validation, PreprocessingParams())
    recorded = validation.tau[np.searchsorted(validation.timestamp, held_out.timestamp)]

    def held_out_rmse(theta: np.ndarray) -> float:
        predicted = predict_torque(builder, held_out, theta, 2000)
        return float(np.sqrt(np.mean((predicted - recorded) ** 2)))

    ls_rmse = held_out_rmse(ls_theta)
    nominal = builder.standard_parameters(robot.inertial_parameters(), armature=robot.armature())
    print(
        f"[convergence] {ident.n_samples} samples replayed; batch ls held-out RMSE "
        f"{ls_rmse:.4f} Nm (its metrics.json: {reported:.4f} Nm; batch ls with tuning=cv, "
        f"csv's default: {tuned:.4f} Nm); nominal model "
        f"{held_out_rmse(nominal):.4f} Nm; the streaming estimate ({' '.join(EXTRA) or 'rls'}) "
        "over the replay:"
    )
    rows = parameter_rows(online_run)
    names = list(rows.dtype.names)
    columns = names[names.index(f"rmse_{robot.n_joints}_Nm") + 1 :]
    for k in sorted({*range(0, len(rows), max(1, len(rows) // 16)), len(rows) - 1}):
        theta = base.to_standard(np.array([rows[c][k] for c in columns]))
        rmse = held_out_rmse(theta)
        print(
            f"    t = {rows['t_s'][k]:6.1f} s: held-out RMSE {rmse:8.4f} Nm, ratio to ls "
            f"{rmse / ls_rmse:7.3f} (own sliding pooled R² {rows['pooled_r2'][k]:.5f})",
            flush=True,
        )


# ---------------------------------------------------------------------- MCAP
def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def mcap_recording(out: Path, minutes: float, seconds: float, rounds: int) -> None:
    """mcap=true: (1) `minutes` of source time as fast as possible, the web process's resident
    memory sampled every 2 s (it must not grow with the run); (2) at real time for `seconds`,
    with and without mcap=true interleaved over `rounds`: the estimator's CPU and update p99,
    the web process's CPU."""
    from ident_framework.testing.cli import running_service

    run = out / "mcap_long"
    overrides = ("online.time_factor=null", f"online.duration_s={60 * minutes:g}", "mcap=true")
    samples: list[tuple[float, float]] = []
    with running_service(run, "online.twin.every_s=null", *overrides) as service:
        start = time.perf_counter()
        while service.process.poll() is None:
            try:
                samples.append((time.perf_counter() - start, rss_mb(service.process.pid)))
            except OSError:
                break
            time.sleep(2.0)
        service.wait(600)
    s = json.loads((run / "online" / "summary.json").read_text())
    size = (run / "online" / "run.mcap").stat().st_size / 2**20
    rss = np.array([m for _, m in samples])
    tenth = rss[len(rss) // 10] if len(rss) else float("nan")
    print(
        f"[mcap] {minutes:g} min of source time as fast as possible in {s['wall_s']:.0f} s: "
        f"{s['mcap']['samples']} joint states, {s['mcap']['steps']} torques "
        f"(dropped {s['mcap']['dropped_samples']}), run.mcap {size:.1f} MiB "
        f"({size / minutes:.1f} MiB per minute of source); web process resident memory "
        f"{tenth:.0f} MB at a tenth of the run, {rss.max():.0f} MB highest, {rss[-1]:.0f} MB "
        f"at the end ({len(rss)} samples every 2 s); skipped updates {s['skipped_updates']}",
        flush=True,
    )
    results: dict[str, list[dict]] = {"without": [], "with mcap=true": []}
    for k in range(rounds):
        for name, extra in (("without", ()), ("with mcap=true", ("mcap=true",))):
            r = service_with_clients(out / f"mcap_{name.split()[0]}_{k}", seconds, 0, 0, *extra)
            results[name].append(r)
            print(
                f"[mcap, round {k + 1}] {name}: load {os.getloadavg()[0]:.1f}: estimator CPU "
                f"{100 * r['estimator_cpu_share']:.1f} % of one core; updates {r['updates']}, "
                f"skipped {r['skipped_updates']}; {latency(r)}; {cpu_line(r)}",
                flush=True,
            )
    for name, runs in results.items():
        print(
            f"[mcap] {name}, median of {len(runs)}: update p99 "
            f"{np.median([r['latency_update']['p99_ms'] for r in runs]):.3f} ms, estimator CPU "
            f"{100 * np.median([r['estimator_cpu_share'] for r in runs]):.1f} %, web process CPU "
            f"{100 * np.median([r['cpu_shares']['web'] for r in runs]):.1f} % of one core",
            flush=True,
        )


# ---------------------------------------------------------------------- RTDE
def rtde(out: Path) -> None:
    from ident_framework.model.robot import load_robot
    from ident_framework.sources.rtde import RtdeSource, RtdeSourceParams
    from ident_framework.testing.rtde import every_package, running_emulator

    host = "127.0.16.1"
    with running_emulator(host) as emulator, every_package(host, str(out / "sent_o.npy")) as sent:
        real_time(emulator.process.pid)
        s = online_cli(
            out / "rtde_online",
            "source=rtde",
            f"source.host={host}",
            "online.duration_s=60",
            "online.twin.every_s=30",
        )
    online_sent = emulator_summary(emulator.stderr)
    online_truth = against_sent(out / "rtde_online" / "online" / "recording.csv", sent[0])
    load_online = os.getloadavg()
    record = out / "rtde_record.csv"
    with running_emulator(host) as emulator, every_package(host, str(out / "sent_r.npy")) as sent:
        real_time(emulator.process.pid)  # the recorder of source=rtde (it only listens)
        params = RtdeSourceParams(host=host, duration_s=60.0, recording_path=str(record))
        data = RtdeSource(params).acquire(load_robot("ur12e"), None)
    acq = data.metadata["acquisition"]
    st = s["stream"]
    print(
        f"[rtde] online 60 s (load {load_online[0]:.2f}): {st['samples_written']} of "
        f"{st['samples_expected']} samples, lost {st['dropped_samples']} "
        f"({100 * (st['dropped_fraction'] or 0):.2f} %; {lost_detail(st)}; {online_truth}; "
        f"emulator {online_sent}), updates {s['updates']}, skipped {s['skipped_updates']}, "
        f"estimator CPU {100 * s['estimator_cpu_share']:.1f} % (RTDE reception "
        f"{100 * s['source_cpu_share']:.1f} %); {latency(s)}"
    )
    print(
        f"[rtde] recorder (source=rtde) 60 s (load {os.getloadavg()[0]:.2f}): "
        f"{acq['samples_written']} of {acq['samples_expected']} samples, lost "
        f"{acq['dropped_samples']} ({100 * acq['dropped_fraction']:.2f} %; {lost_detail(acq)}; "
        f"{against_sent(record, sent[0])}; emulator {emulator_summary(emulator.stderr)})",
        flush=True,
    )


def against_sent(recording: Path, sent_us: np.ndarray) -> str:
    """The recording against every package the emulator sent meanwhile (a reference connection
    in a process of its own): what it never sent inside the recording's span (its own skips)
    and what it sent that the recording lacks (lost by reception)."""
    stamps = np.loadtxt(recording, delimiter=",", skiprows=1, usecols=0, ndmin=1)
    written = np.round(stamps * 1e6).astype(np.int64)
    inside = sent_us[(sent_us >= written[0]) & (sent_us <= written[-1])]
    never_sent = int(round((written[-1] - written[0]) / 2000)) + 1 - inside.size
    lacking = np.setdiff1d(inside, written).size
    return f"never sent by the emulator {never_sent}, sent but not recorded {lacking}"


def real_time(pid: int) -> None:
    """--emulator-priority: run the emulator with SCHED_FIFO, as a controller's real-time loop
    (needs privileges); otherwise it is a normal process that skips packages when it is late."""
    if EMULATOR_PRIORITY is not None:
        os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(EMULATOR_PRIORITY))
        print(f"[rtde] emulator at SCHED_FIFO {EMULATOR_PRIORITY}", flush=True)


def lost_detail(summary: dict) -> str:
    """Where the samples went: the poller's misses, how many of them our own connection filled,
    rows without torque, invalid rows."""
    return (
        f"receive interface missed {summary.get('samples_missed')}, filled from our own "
        f"connection {summary.get('samples_filled', 0)}, without torque "
        f"{summary.get('torque_missing_samples')}, invalid {summary.get('invalid_samples')}"
    )


def emulator_summary(stderr: list[str]) -> str:
    """The emulator's closing line: packages sent and skipped because it was late."""
    lines = [line.strip() for line in stderr if "stopped:" in line]
    return lines[-1].split("stopped: ", 1)[1] if lines else "no summary"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated: {PARTS}")
    parser.add_argument("--minutes", type=float, default=10.0, help="sustained: source minutes")
    parser.add_argument(
        "--time-factor",
        type=lambda v: None if v.lower() in ("null", "none") else float(v),
        default=1.0,
        help="sustained: 1 real time, 2 twice as fast, null as fast as possible",
    )
    parser.add_argument("--sustained-priority", type=int, default=None, help="SCHED_FIFO level")
    parser.add_argument("--realtime-s", type=float, default=60.0, help="realtime, clients: s")
    parser.add_argument("--mcap-minutes", type=float, default=5.0, help="mcap: source minutes")
    parser.add_argument("--method", default=None, help="online.estimator.method (rls default)")
    parser.add_argument(
        "--schedulings",
        default="slice,noslice,fifo10",
        help=f"realtime, clients: comma-separated of {list(SCHEDULINGS)}",
    )
    parser.add_argument("--rounds", type=int, default=3, help="clients: interleaved rounds")
    parser.add_argument(
        "--client-nice", type=int, default=0, help="clients: niceness of the clients' process"
    )
    parser.add_argument(
        "--emulator-priority", type=int, default=None, help="rtde: SCHED_FIFO level of the emulator"
    )
    parser.add_argument("--out", default=None)
    parser.add_argument("--override", action="append", default=[], help="KEY=VALUE (repeat)")
    args = parser.parse_args()
    if args.method:
        EXTRA.append(f"online.estimator.method={args.method}")
    EXTRA.extend(args.override)
    global CLIENT_NICE, EMULATOR_PRIORITY
    CLIENT_NICE, EMULATOR_PRIORITY = args.client_nice, args.emulator_priority
    out = Path(args.out or tempfile.mkdtemp(prefix="bench_online_"))
    out.mkdir(parents=True, exist_ok=True)
    parts = args.parts.split(",")
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; choose from {PARTS}")
    print(f"load average {os.getloadavg()}; outputs in {out}; extra {EXTRA}", flush=True)
    if "sustained" in parts:
        sustained(out, args.minutes, args.time_factor, args.sustained_priority)
    if "realtime" in parts or "clients" in parts:
        rounds = args.rounds if "clients" in parts else 1
        chosen = args.schedulings.split(",")
        if set(chosen) - set(SCHEDULINGS):
            parser.error(f"--schedulings: choose from {list(SCHEDULINGS)}")
        realtime_and_clients(out, args.realtime_s, "clients" in parts, chosen, rounds)
    if "drift" in parts:
        drift(out)
    if "convergence" in parts:
        convergence(out)
    if "rtde" in parts:
        rtde(out)
    if "mcap" in parts:
        mcap_recording(out, args.mcap_minutes, args.realtime_s, args.rounds)
    print(f"load average {os.getloadavg()} at the end", flush=True)


if __name__ == "__main__":
    main()
