"""Process settings of the command line, applied on import, before MuJoCo is imported.

- ``MUJOCO_GL`` is set to ``disable`` when unset (``egl``, glfw or osmesa for a plugin that
  renders).
- With glibc, freed memory is kept for reuse (heap below 32 MB blocks, trimmed only above 1 GB
  free) unless ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_TRIM_THRESHOLD_`` is set.

Rationale: docs/design.md#process-settings
"""

from __future__ import annotations

import ctypes
import os

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
