"""A real UR robot over RTDE: protocol, recorder, excitation playback, motion safety, the
rehearsal gate, and an RTDE controller emulator for tests."""
