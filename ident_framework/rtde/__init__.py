"""A real UR robot over RTDE: protocol, recorder, torque stream, playback, the rehearsal gate,
and an RTDE controller emulator (with its simulated arm) for tests without a robot."""
