"""Command line: `python -m ident_framework [overrides]` (one run) or `-m` (a sweep).

Exit code 0 on success, 2 on a user error (one-paragraph message, no traceback), 3 when a
rehearsal (`mode=rehearse`) ran but failed a check (its outputs are kept).
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from ident_framework.config.preflight import CONFIG_MODULE, CONFIG_NAME, check_command_line
from ident_framework.config.search_path import register_plugin_search_path
from ident_framework.errors import RehearsalFailed, UserError

EXIT_USER_ERROR = 2
EXIT_REHEARSAL_FAILED = 3


def fail(error: UserError) -> None:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(EXIT_USER_ERROR)


@hydra.main(config_path=f"pkg://{CONFIG_MODULE}", config_name=CONFIG_NAME, version_base="1.3")
def run_job(cfg: DictConfig) -> float | None:
    from ident_framework.modes.job import run_one_job

    try:
        return run_one_job(cfg)
    except UserError as error:
        fail(error)
    except RehearsalFailed as failure:
        print(f"rehearsal FAILED: {failure}", file=sys.stderr)
        sys.exit(EXIT_REHEARSAL_FAILED)
    return None


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    register_plugin_search_path()
    try:
        check_command_line(argv)
    except UserError as error:
        fail(error)
    sys.argv = [sys.argv[0], *argv]
    run_job()


if __name__ == "__main__":
    main()
