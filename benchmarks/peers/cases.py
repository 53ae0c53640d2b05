"""The benchmark's cases: the same identification and validation data for both tools.

tx40   Stäubli TX40 (FIGAROH's own example robot), rows [0, 24750) identify, [29250, 45000)
       validate; FIGAROH reads the motor-side files as its example does, the project gets them
       converted to the CSV contract on the joint side (conversions.py) and its robot preset
       (`robot=staubli_tx40`: the URDF plus the coupled wrist, as a user would run it).
kuka   KUKA LWR4+ real data: measurement 3 validates; FIGAROH identifies on 1 and on 1+2
       (joined end to end), the project on 1, and on 1+2 given as a list
       (`source.path=[m1.csv,m2.csv]`: each recording preprocessed on its own, then stacked).
ur10e  Simulated UR10e (soft MuJoCo friction, an unknown 1.5 kg payload), identification on the
       default Fourier excitation at each size, validation on the default point-to-point motion.
       The timed case: `--repeat`, the roofline (the regressor kernel alone on its samples) and,
       with `--busy`, both tools again beside one process spinning on a core (peers/load.py).
panda  Franka Panda real data (panda_gaz2019, GPL-3.0: read where it is, never copied): identify
       on ident_traj1_part1 + part3, validate on val_traj1_middle (columns time, q_j, dq_j, tau_j,
       ~1 kHz with jittery timestamps). The project is given the files with a column mapping
       (`source.columns={time: time, q: q_, dq: dq_, tau: tau_}`, the same for validation), as a
       user runs it; FIGAROH joins the two files end to end, as for KUKA 1+2.

Every case runs FIGAROH twice: with its fixed setting ("figaroh") and with its cut-off, torque
offset and edge trim chosen by time-blocked cross-validation on the identification data alone
("figaroh tuned", `--tune` of its drivers: peers/figaroh_tuning.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import conversions
from .load import busy_core
from .runs import Settings, ToolRun, median_run, run_figaroh, run_ours
from .scoring import CONTRACT_COLUMNS, Columns


def find_datasets() -> Path:
    """`shared/datasets` beside the checkout or one of its parents (a worktree's too)."""
    for folder in Path(__file__).resolve().parents:
        if (folder / "shared" / "datasets").is_dir():
            return folder / "shared" / "datasets"
    return Path("shared/datasets")


DATASETS = find_datasets()
TX40_IDENT_ROWS = (0, 24750)
TX40_VAL_ROWS = (29250, 45000)
PANDA_IDENT = ("ident_traj1_part1.csv", "ident_traj1_part3.csv")
PANDA_VALIDATION = "val_traj1_middle.csv"
PANDA_COLUMNS = Columns(time="time", dq="dq_", tau="tau_")
PANDA_MAPPING = "{time: time, q: q_, dq: dq_, tau: tau_}"  # the project's source.columns
TUNED = "figaroh tuned"


@dataclass
class CaseResult:
    """All runs of one case (and size) against one validation file."""

    case: str
    size: int
    validation: Path
    n_joints: int
    runs: list[ToolRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    columns: Columns = CONTRACT_COLUMNS  # the validation file's time, dq and torque columns
    # the regressor kernel alone on the case's samples, per load ("idle", "busy"): see
    # project_io.kernel_rate (UR10e cases only)
    roofline: dict[str, dict] = field(default_factory=dict)


def _tune(settings: Settings) -> list[str]:
    """The FIGAROH drivers' arguments of the tuned run."""
    return ["--tune", "--full-grid"] if settings.figaroh_full_grid else ["--tune"]


def _project_io():
    from . import project_io  # the one module importing ident_framework

    return project_io


def _ours_variants(settings, case, size, ident, overrides, command, result):
    for name, extra in settings.ours_variants.items():
        label = f"ours[{name}]"
        result.runs.append(run_ours(settings, case, size, label, ident, overrides + extra, command))


def tx40(settings: Settings, datasets: Path = DATASETS) -> list[CaseResult]:
    io = _project_io()
    tx40_dir = datasets / "staubli_tx40"
    folder = settings.data / "tx40"
    folder.mkdir(parents=True, exist_ok=True)
    ident_csv, val_csv = folder / "tx40_ident.csv", folder / "tx40_validation.csv"
    urdf = folder / "tx40_no_meshes.urdf"
    if not (ident_csv.exists() and val_csv.exists() and urdf.exists()):
        settings.log("[tx40] converting the motor-side logs to the joint-side CSV contract")
        q_motor, i_motor = conversions.read_tx40_motor_side(tx40_dir)
        for (start, stop), path in ((TX40_IDENT_ROWS, ident_csv), (TX40_VAL_ROWS, val_csv)):
            recording = conversions.tx40_joint_side(q_motor[start:stop], i_motor[start:stop], start)
            io.write_recording(recording, path)
        conversions.strip_geometry(tx40_dir / "tx40_mdh_modified.urdf", urdf)
    size = TX40_IDENT_ROWS[1] - TX40_IDENT_ROWS[0]
    result = CaseResult("tx40", size, val_csv, 6)
    ident = f"rows {TX40_IDENT_ROWS[0]}-{TX40_IDENT_ROWS[1]}"
    overrides = [
        "robot=staubli_tx40", f"robot.path={tx40_dir / 'tx40_mdh_modified.urdf'}",
        "source=csv", f"source.path={ident_csv}",
        "validation=csv", f"validation.path={val_csv}", "plots=false",
    ]  # fmt: skip
    command = io.project_command()
    result.runs.append(run_ours(settings, "tx40", size, "ours", ident, overrides, command))
    _ours_variants(settings, "tx40", size, ident, overrides, command, result)
    args = ["--data", str(tx40_dir), "--config", str(tx40_dir / "TX40_config.yaml")]
    args += ["--urdf", str(urdf), "--ident-rows", "{}:{}".format(*TX40_IDENT_ROWS)]
    args += ["--val-rows", "{}:{}".format(*TX40_VAL_ROWS)]
    runs = (
        ("figaroh", []),
        (TUNED, _tune(settings)),
        ("figaroh[literal border]", ["--border", "literal"]),
    )
    for label, extra in runs:
        driver = "figaroh_tx40.py"
        result.runs.append(run_figaroh(settings, "tx40", size, label, ident, driver, args + extra))
    result.notes.append(
        "both model the wrist coupling of joints 5-6 (motor 6 drives both): FIGAROH with its "
        "example's columns Iam6, fvm6, fsm6, the project with its robot=staubli_tx40 preset "
        "(robot.coupled_joints [5, 6], ratio 1: columns Ia_m6, fv_m6, fc_m6)"
    )
    result.notes.append(
        "the data have no velocity: the converter writes actual_qd = numpy.gradient(q, t) "
        "(central differences of the joint-side q at 5 kHz, unfiltered)"
    )
    return [result]


def _median_rate(csv: Path) -> float:
    t = np.loadtxt(csv, delimiter=",", skiprows=1, usecols=[0], max_rows=2000)
    return float(round(1.0 / np.median(np.diff(t)), 3))


def kuka(settings: Settings, datasets: Path = DATASETS) -> list[CaseResult]:
    io = _project_io()
    kuka_dir = datasets / "kuka_lwr4"
    folder = settings.data / "kuka"
    folder.mkdir(parents=True, exist_ok=True)
    csv = {i: folder / f"kuka_measurements_{i}.csv" for i in (1, 2, 3)}
    urdf = folder / "kuka_lwr4_no_meshes.urdf"
    for i, path in csv.items():
        if not path.exists():
            settings.log(f"[kuka] converting measurements_{i}.npz to the CSV contract")
            io.write_recording(conversions.kuka_recording(kuka_dir / f"measurements_{i}.npz"), path)
    if not urdf.exists():
        conversions.strip_geometry(kuka_dir / "kuka_lwr4.urdf", urdf)
    size = sum(1 for _ in open(csv[1], encoding="utf-8")) - 1
    result = CaseResult("kuka", size, csv[3], 7)
    common = [
        "robot=urdf", f"robot.path={kuka_dir / 'kuka_lwr4.urdf'}", "source=csv",
        "validation=csv", f"validation.path={csv[3]}", "plots=false",
    ]  # fmt: skip
    command = io.project_command()
    one = [*common, f"source.path={csv[1]}"]
    result.runs.append(run_ours(settings, "kuka", size, "ours", "measurement 1", one, command))
    _ours_variants(settings, "kuka", size, "measurement 1", one, command, result)
    both = [*common, f"source.path=[{csv[1]},{csv[2]}]"]
    several = run_ours(settings, "kuka", 2 * size, "ours", "measurements 1+2", both, command)
    result.runs.append(several)
    _ours_variants(settings, "kuka", 2 * size, "measurements 1+2", both, command, result)
    args = ["--val", str(csv[3]), "--urdf", str(urdf), "--fs", str(_median_rate(csv[1]))]
    for label, extra in (("figaroh", []), (TUNED, _tune(settings))):
        result.runs.append(
            run_figaroh(settings, "kuka", size, label, "measurement 1",
                        "figaroh_csv.py", ["--ident", str(csv[1]), *args, *extra])
        )  # fmt: skip
        result.runs.append(
            run_figaroh(settings, "kuka", 2 * size, label, "measurements 1+2 (joined)",
                        "figaroh_csv.py", ["--ident", str(csv[1]), str(csv[2]), *args, *extra])
        )  # fmt: skip
    result.notes.append(
        "FIGAROH takes one trajectory: 1+2 are joined end to end, its filters run across the seam"
        "; FIGAROH tuned on 1+2: one CV fold per recording"
    )
    return [result]


BUSY = " (busy)"  # the label suffix of the runs beside one spinning process (--busy)


def _timed_pair(settings, size, ident, overrides, command, args, suffix=""):
    """(ours, FIGAROH): each run `settings.repeat` times, alternating, the median kept."""
    ours, peer = [], []
    # repeated: the timed runs are not polled (the poll costs CPU on this 2-core machine),
    # one more pair measures the process trees' memory
    polled = settings.repeat == 1
    label, figaroh = f"ours{suffix}", f"figaroh{suffix}"
    for _ in range(settings.repeat + (not polled)):  # alternating: the same moods for both
        poll = polled or len(ours) == settings.repeat
        ours.append(run_ours(settings, "ur10e", size, label, ident, overrides, command, poll))
        peer.append(
            run_figaroh(settings, "ur10e", size, figaroh, ident, "figaroh_csv.py", args, poll)
        )
    if polled:
        return median_run(ours), median_run(peer)
    return median_run(ours[:-1], ours[-1]), median_run(peer[:-1], peer[-1])


def ur10e(settings: Settings, sizes: list[int]) -> list[CaseResult]:
    """Per size: ours and FIGAROH timed (alternating, `--repeat`), the regressor kernel alone
    on the same samples (the roofline); with `--busy` all of it again beside one process
    spinning on a core (peers/load.py), rows labelled "(busy)"; then FIGAROH tuned and the
    variants, on the idle machine."""
    io = _project_io()
    paths = io.simulate_ur10e(settings.data / "ur10e", sizes, log=settings.log)
    results = []
    for size in sizes:
        result = CaseResult("ur10e", size, paths["validation"], 6)
        ident_csv = paths["ident"][size]
        ident = f"Fourier excitation, {size} samples"
        overrides = [
            "robot=ur10e", "source=csv", f"source.path={ident_csv}",
            "validation=csv", f"validation.path={paths['validation']}", "plots=false",
        ]  # fmt: skip
        command = io.project_command()
        args = ["--ident", str(ident_csv), "--val", str(paths["validation"])]
        args += ["--urdf", str(paths["urdf"]), "--fs", "500"]
        idle = _timed_pair(settings, size, ident, overrides, command, args)
        result.runs += idle
        settings.log(f"[ur10e] the regressor kernel alone on the {size} samples (roofline)")
        result.roofline["idle"] = io.kernel_rate(ident_csv)
        busy = None
        if settings.busy:
            settings.log("[ur10e] busy machine: one process spinning on a core from now on")
            with busy_core() as spinner:
                result.roofline["busy"] = io.kernel_rate(ident_csv)
                busy = _timed_pair(settings, size, ident, overrides, command, args, BUSY)
            result.runs += busy
            result.notes.append(f"{size} samples, {spinner.note()}")
            settings.log(f"[ur10e] spinner stopped: {100 * spinner.share:.0f} % of one core")
        limit = settings.tune_figaroh_up_to
        if limit is not None and size > limit:  # ~15 settings x 5 folds of FIGAROH's solve
            skipped = f"skipped: above --tune-figaroh-up-to {limit}"
            result.runs.append(ToolRun("ur10e", size, "figaroh", TUNED, ident, status=skipped))
        else:
            tuned = [*args, *_tune(settings)]
            result.runs.append(
                run_figaroh(settings, "ur10e", size, TUNED, ident, "figaroh_csv.py", tuned)
            )
        _ours_variants(settings, "ur10e", size, ident, overrides, command, result)
        if settings.repeat > 1:
            result.notes.append(_walls_note(size, settings.repeat, *idle))
            if busy is not None:
                result.notes.append(_walls_note(size, settings.repeat, *busy, "busy"))
        results.append(result)
    meta = settings.data / "ur10e" / "excitation.json"
    if meta.exists():
        cond = json.loads(meta.read_text()).get("cond")
        results[0].notes.append(f"excitation: default Fourier search, cond {cond}")
    return results


def panda(settings: Settings, datasets: Path = DATASETS) -> list[CaseResult]:
    """Franka Panda: ours with the column mapping (fails, reported, while the command cannot
    read these headers), FIGAROH fixed and tuned. [] when the data folder is absent."""
    folder = datasets / "panda_gaz2019"
    files = [folder / name for name in (*PANDA_IDENT, PANDA_VALIDATION, "panda_arm.urdf")]
    if not all(f.is_file() for f in files):
        settings.log(f"[panda] skipped: no {folder} with {[f.name for f in files]}")
        return []
    *ident, validation, urdf = files
    cache = settings.data / "panda"
    cache.mkdir(parents=True, exist_ok=True)
    no_meshes = conversions.strip_geometry(urdf, cache / "panda_arm_no_meshes.urdf")
    size = sum(sum(1 for _ in open(f, encoding="utf-8")) - 1 for f in ident)
    result = CaseResult("panda", size, validation, 7, columns=PANDA_COLUMNS)
    label = "part1 + part3"
    overrides = [
        "robot=urdf", f"robot.path={urdf}", "source=csv", f"source.path=[{ident[0]},{ident[1]}]",
        f"source.columns={PANDA_MAPPING}", "validation=csv", f"validation.path={validation}",
        f"validation.columns={PANDA_MAPPING}", "plots=false",
    ]  # fmt: skip
    command = _project_io().project_command()
    result.runs.append(run_ours(settings, "panda", size, "ours", label, overrides, command))
    _ours_variants(settings, "panda", size, label, overrides, command, result)
    args = ["--ident", *map(str, ident), "--val", str(validation), "--urdf", str(no_meshes)]
    args += ["--columns", "time=time,q=q_,dq=dq_,tau=tau_"]  # fs: the median timestamp step
    for name, extra in (("figaroh", []), (TUNED, _tune(settings))):
        result.runs.append(
            run_figaroh(settings, "panda", size, name, f"{label} (joined)", "figaroh_csv.py",
                        [*args, *extra])
        )  # fmt: skip
    result.notes.append(
        "data read from the shared folder (GPL-3.0), not copied; timestamps jittery (0.7-8.8 ms "
        "steps, median 1 ms): FIGAROH's filters assume its sampling rate from the median step; "
        "part1 and part3 are joined end to end for FIGAROH (one CV fold each when tuned)"
    )
    return [result]


def _walls_note(size: int, repeat: int, ours: ToolRun, peer: ToolRun, load: str = "") -> str:
    """The wall times of every repeated run (the table gives the median of each tool)."""

    def walls(run: ToolRun) -> str:
        times = run.stats.walls_s if run.stats and run.status == "ok" else ()
        return " ".join(f"{t:.2f}" for t in times) or run.status

    return (
        f"{size} samples{f' ({load})' if load else ''}, {repeat} alternating runs of each, "
        f"their process trees not polled "
        f"(the tables: the median; memory from one more polled run of each): "
        f"ours {walls(ours)} s; FIGAROH {walls(peer)} s"
    )
