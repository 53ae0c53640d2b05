"""The digital twin: write identified parameters back into MJCF/URDF and check it."""
