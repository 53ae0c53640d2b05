"""Compatibility module: `ident_framework.rehearsal_gate.require_passed_rehearsal`
(documented), what a source that moves a real robot calls first, now lives in
`ident_framework.rtde.rehearsal_gate`."""

from ident_framework.rtde.rehearsal_gate import *  # noqa: F403
from ident_framework.rtde.rehearsal_gate import require_passed_rehearsal

__all__ = ["require_passed_rehearsal"]
