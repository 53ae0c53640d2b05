"""Process settings of the command line, applied on import, before MuJoCo is imported.

- ``MUJOCO_GL`` is set to ``disable`` when unset (``egl``, glfw or osmesa for a plugin that
  renders).
- With glibc, freed memory is kept for reuse (heap below 32 MB blocks, trimmed only above 1 GB
  free) unless ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_TRIM_THRESHOLD_`` is set.
- Run as the command (``python -m ident_framework``), the cyclic garbage collector is paused
  while the command starts (imports, Hydra's compose, the config's validation) and
  `resume_collection` freezes what is alive then and starts it again before the job runs.

Rationale: docs/design.md#process-settings
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys

os.environ.setdefault("MUJOCO_GL", "disable")

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)
TRIM_THRESHOLD_BYTES = 1 << 30
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)


def keep_freed_memory() -> bool:
    """Set glibc's trim and mmap thresholds (see the module doc); False where there is no
    glibc (macOS, musl) or the user set them through the environment."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") or os.environ.get("MALLOC_TRIM_THRESHOLD_"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError):  # no mallopt: not glibc
        return False
    return bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
        and mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    )


keep_freed_memory()


def _running_as_command() -> bool:
    """Whether this process runs `python -m ident_framework` (runpy gave `__main__` its spec)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == "ident_framework.__main__"


def resume_collection() -> None:
    """Start the garbage collector paused on import again, the objects alive now (modules,
    the composed config: ~80,000) frozen out of its passes; nothing when it was not paused."""
    global _PAUSED
    if _PAUSED:
        _PAUSED = False
        gc.freeze()
        gc.enable()


_PAUSED = _running_as_command() and gc.isenabled()
if _PAUSED:  # the start allocates ~10^5 long-lived objects: ~0.04 s of passes over them
    gc.disable()
