"""Every file name of a run directory the engine writes or reads back (README's "Run
directory" describes them), except those plugins name: a residual learner's files in
`residual/`, `write_outputs` files (e.g. `rls_*.csv`, `plots/bpnn_training.png`) and the
rtde source's recording (`source.recording_path`).
"""

from __future__ import annotations

# every identification
METRICS = "metrics.json"
PARAMETERS = "parameters.yaml"
PREDICTIONS_VALIDATION = "predictions_validation.csv"
TRAJECTORY = "trajectory.yaml"  # with an excitation (a source that moves a robot)
PLUGINS = "plugins.yaml"
CONFIG = "config.yaml"  # the resolved config: what mode=predict rebuilds the model from
SUMMARY = "summary.txt"
RESIDUAL_FOLDER = "residual"  # the residual learner's `save` (when one ran)
TWIN_MJCF = "twin.xml"  # the twin write-back (physically valid parameters only)
TWIN_URDF = "twin.urdf"
TUNING_CSV = "tuning.csv"  # tuning=cv: every candidate tried, its cross-validated RMSE

# plots/
PLOTS = "plots"
VALIDATION_TORQUE_PLOT = "validation_torque.png"
RMSE_PER_JOINT_PLOT = "rmse_per_joint.png"
EXCITATION_PLOT = "excitation.png"
LOOP_R2_PLOT = "loop_r2.png"

# closed loop (loop.iterations > 1)
LOOP_CSV = "loop.csv"
LOOP_MARKDOWN = "loop.md"
LOOP_TRAJECTORIES = "loop_trajectories.yaml"

# mode=rehearse: the checks, the planted robot; its twin is of the planted robot, never
# named twin.xml
REHEARSAL_JSON = "rehearsal.json"
REHEARSAL_MARKDOWN = "rehearsal.md"
REHEARSAL_ROBOT = "rehearsal_robot.xml"
REHEARSAL_TWIN_PREFIX = "rehearsal_"

# mode=online: written as the run goes (online/run_logs.py), beside PARAMETERS, CONFIG
# and TWIN_MJCF (the latest valid twin) of the run directory
ONLINE_FOLDER = "online"
ONLINE_PARAMETERS_CSV = "parameters.csv"  # in ONLINE_FOLDER, and so are the next four
ONLINE_EVENTS_JSONL = "events.jsonl"
ONLINE_SUMMARY_JSON = "summary.json"
ONLINE_RECORDING = "recording.csv"  # source=rtde: what the service received
ONLINE_MCAP = "run.mcap"  # mcap=true: samples, torques and events (online/mcap_recording)
ONLINE_TWINS_FOLDER = "twins"  # every valid twin, online_twin_snapshot(t) inside

# the staging folder a job writes into before its outputs are moved into the run directory,
# and what Hydra writes there itself
STAGING = ".incomplete"
HYDRA_FOLDER = ".hydra"
HYDRA_OVERRIDES = "overrides.yaml"  # in HYDRA_FOLDER

# a sweep directory (-m): the comparison of its runs
COMPARISON_CSV = "comparison.csv"
COMPARISON_MARKDOWN = "comparison.md"
COMPARISON_PLOT = "comparison_rmse_per_joint.png"
FAILED_JOB = "failed.json"  # in a job directory of a sweep: why the job has no results

# mode=factor (exact distributed identification): the part's sufficient statistics
STATISTICS = "statistics.npz"
FACTOR_SUMMARY = "statistics.json"


def twin_files(prefix: str = "") -> tuple[str, str]:
    """(MJCF, URDF) names of a twin written with `prefix` ("" or REHEARSAL_TWIN_PREFIX)."""
    return f"{prefix}{TWIN_MJCF}", f"{prefix}{TWIN_URDF}"


def prediction_files(stem: str) -> tuple[str, str]:
    """mode=predict: (predictions CSV, metrics JSON) of the recording with file stem `stem`."""
    return f"predictions_{stem}.csv", f"metrics_{stem}.json"


def online_twin_snapshot(t_s: float) -> str:
    """mode=online: the name of the twin fitted up to source time `t_s` (s)."""
    return f"twin_{t_s:09.3f}s.xml"
