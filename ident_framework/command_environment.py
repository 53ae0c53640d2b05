"""Process settings of the command line, applied on import, before MuJoCo is imported.

The command renders nothing with MuJoCo, so it does not load MuJoCo's OpenGL backend (glfw
and its library search, ~0.1 s per command) unless the user chose one: ``MUJOCO_GL`` is set
to ``disable`` when it is unset. Set ``MUJOCO_GL=egl`` (or glfw, osmesa) for a plugin that
renders.
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "disable")
