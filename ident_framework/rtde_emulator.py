"""Compatibility module. `python -m ident_framework.rtde_emulator` (documented): the RTDE controller
emulator, now `ident_framework.rtde.emulator`."""

from ident_framework.rtde.emulator import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
