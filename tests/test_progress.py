"""What a waiting user sees: bars on a terminal, lines every few seconds elsewhere, a line
per pipeline step off a terminal, and nothing but the summary on stdout."""

from __future__ import annotations

import io

from ident_framework import progress
from ident_framework.testing.cli import run_cli


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_a_progress_writes_a_line_every_few_seconds(monkeypatch):
    clock, err = _Clock(), io.StringIO()
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    monkeypatch.setattr(progress.sys, "stderr", err)
    with progress.progress(total=10, desc="search", unit="candidate") as bar:
        for _ in range(10):
            clock.now += 1.5
            bar.update()
    lines = err.getvalue().splitlines()
    assert lines == [  # the first after FIRST_LINE_S, then every LINE_EVERY_S
        "search: 10 % (1 of 10 candidates), 1.5 s",
        "search: 40 % (4 of 10 candidates), 6.0 s",
        "search: 70 % (7 of 10 candidates), 10.5 s",
        "search: 100 % (10 of 10 candidates), 15.0 s",
        "search: done, 15.0 s",
    ]
    err.truncate(0)
    for _ in progress.progress(range(3), desc="quick"):  # under FIRST_LINE_S: silent
        clock.now += 0.1
    for _ in progress.progress(range(9), desc="off", enabled=False):
        clock.now += 5.0
    assert err.getvalue().strip("\x00") == ""


def test_on_a_terminal_a_progress_is_a_bar(monkeypatch):
    monkeypatch.setattr(progress, "on_terminal", lambda: True)
    bar = progress.progress(total=3, desc="x")
    try:
        assert type(bar).__name__ == "tqdm"
    finally:
        bar.close()


def test_stage_lines_only_off_a_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(progress.sys, "stderr", err)
    monkeypatch.setattr(progress, "on_terminal", lambda: False)
    progress.stage_line("tuning", 2.345)
    monkeypatch.setattr(progress, "on_terminal", lambda: True)
    progress.stage_line("twin", 0.2)
    assert err.getvalue() == "tuning: 2.3 s\n"


def test_a_piped_run_says_each_step_on_stderr_and_only_its_summary_on_stdout(tmp_path):
    result = run_cli(
        "trajectory.n_candidates=40", "trajectory.n_refine=0", "plots=false",
        f"hydra.run.dir={tmp_path}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    steps = [line.split(":")[0] for line in result.stderr.splitlines() if line.endswith(" s")]
    assert {"robot", "excitation", "data", "tuning", "regressor", "prediction"} <= set(steps)
    assert "[INFO]" not in result.stdout and "[INFO]" not in result.stderr
    assert result.stdout.splitlines()[0].startswith("robot ur12e:")
