"""Built-in options of the `trajectory` config group, one module each (`fourier.py`, with its
series in `fourier_series.py` and its search in `fourier_search.py`; `point_to_point.py`),
trajectory files (`file.py`), the joint move from a pose to a trajectory's start
(`joint_move.py`), and the motion safety check every designed or played motion passes: limits,
nominal torques and the workspace (`motion_safety.py`)."""
