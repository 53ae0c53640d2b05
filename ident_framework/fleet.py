"""Command line of fleet mode: `python -m ident_framework.fleet LOGS... [-- OVERRIDES]`
(see `modes/fleet.py`)."""

from ident_framework.modes.fleet import main

if __name__ == "__main__":
    main()
