"""Built-in options of the `trajectory` config group, one module or package each: `fourier/`
(the generator, its settings, its search and the Fourier series) and `point_to_point.py`. The
safety check every designed or played motion passes is `model/motion_safety.py`; trajectory
files and the emulator's default motion are `rtde/playback.py`."""
