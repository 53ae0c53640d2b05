"""Built-in options of the `trajectory` config group: `fourier/` and `point_to_point.py`. The
safety check every motion passes is `model/motion_safety.py`."""
