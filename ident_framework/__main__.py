"""Command line: `python -m ident_framework [overrides]` (one run) or `-m` (a sweep).

Exit code 0 on success, 2 on a user error (one-paragraph message, no traceback), 3 when a
rehearsal (`mode=rehearse`) ran but failed a check (its outputs are kept). In a sweep a failed
job is recorded in its job directory and the other jobs go on; the sweep then exits with the
worst job's code (`reports/sweep.py`).
"""

from __future__ import annotations

# isort: split
# process settings first: before anything imports MuJoCo, and the collector paused from here
from ident_framework.command_environment import resume_collection

# isort: split
import atexit
import logging
import os
import sys
import threading
from contextlib import nullcontext

import hydra
from omegaconf import DictConfig

from ident_framework.config.preflight import (
    CONFIG_MODULE,
    CONFIG_NAME,
    asks_for_help,
    prepare_command_line,
    run_single,
    shared_group_listing,
    use_libyaml_loader,
)
from ident_framework.config.search_path import register_plugin_search_path
from ident_framework.errors import RehearsalFailed, UserError
from ident_framework.reports.sweep import (
    EXIT_CRASH,
    LAST_SWEEP,
    in_sweep,
    record_failed_job,
    report_unfinished_sweep,
)

EXIT_USER_ERROR = 2
EXIT_REHEARSAL_FAILED = 3


@hydra.main(config_path=f"pkg://{CONFIG_MODULE}", config_name=CONFIG_NAME, version_base="1.3")
def run_job(cfg: DictConfig) -> float | None:
    from ident_framework.job import run_one_job

    try:
        return run_one_job(cfg)
    except (UserError, RehearsalFailed) as error:
        user = isinstance(error, UserError)
        print(f"{'error' if user else 'rehearsal FAILED'}: {error}", file=sys.stderr)
        code = EXIT_USER_ERROR if user else EXIT_REHEARSAL_FAILED
        if not in_sweep():
            sys.exit(code)
        record_failed_job(error, code)
    except Exception as error:
        if not in_sweep():
            raise
        record_failed_job(error, EXIT_CRASH)
        logging.getLogger(__name__).exception("job failed")
    return None


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    register_plugin_search_path()
    use_libyaml_loader()  # Hydra reads the config files with it
    try:
        _, single = prepare_command_line(argv, run_job)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    resume_collection()  # the command has started (command_environment.py)
    if single is not None:  # one job: composed once above, run as Hydra runs it
        run_single(single, run_job.__wrapped__)
        exit_promptly(0)
        return
    sys.argv = [sys.argv[0], *argv]
    try:
        with shared_group_listing() if asks_for_help(argv) else nullcontext():
            run_job()
    except SystemExit:
        report_unfinished_sweep()  # a launcher that lost a job: Hydra said why, and exits 1
        raise
    if LAST_SWEEP["failed"]:
        print(
            f"error: {LAST_SWEEP['failed']} of {LAST_SWEEP['jobs']} jobs of the sweep failed "
            "(each is a row of comparison.md with its error; the others' results are kept).",
            file=sys.stderr,
        )
        sys.exit(LAST_SWEEP["exit_code"])


def exit_promptly(code: int) -> None:
    """End a finished one-job command now: exit handlers run and streams are flushed, but the
    interpreter's teardown is skipped (docs/design.md#process-settings). Only from the command
    line (`main()` called from Python returns) and when no other non-daemon thread runs."""
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if not _COMMAND_LINE or any(t.is_alive() and not t.daemon for t in others):
        return
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


_COMMAND_LINE = False  # set when this module runs as the command (`python -m ident_framework`)

if __name__ == "__main__":
    _COMMAND_LINE = True
    main()
