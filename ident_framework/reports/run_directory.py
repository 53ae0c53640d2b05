"""All-or-nothing run directories: outputs are written to a staging folder and moved into the
run directory only when the whole run succeeded."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ident_framework.reports.run_files import HYDRA_FOLDER, STAGING


@contextmanager
def staged_outputs(run_dir: Path) -> Iterator[Path]:
    """Yield a staging folder; on success move its files into run_dir, on any failure remove
    it together with the files Hydra wrote for this job, and the run dir if left empty."""
    staging = run_dir / STAGING
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_job_bookkeeping(run_dir)
        raise
    for item in sorted(staging.iterdir()):
        target = run_dir / item.name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        item.rename(target)
    staging.rmdir()


def _remove_job_bookkeeping(run_dir: Path) -> None:
    shutil.rmtree(run_dir / HYDRA_FOLDER, ignore_errors=True)
    for log in run_dir.glob("*.log"):
        log.unlink()
    try:
        run_dir.rmdir()  # only if empty: never delete what an earlier run left there
    except OSError:
        pass
