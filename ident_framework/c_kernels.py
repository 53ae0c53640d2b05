"""The project's C kernels: built from their C99 sources by the system C compiler on first use,
cached per user, loaded with ctypes; numba runs the same loops where no compiler works.

    library = load("ident_framework.model", "rigid_body_kernel.c", {name: (restype, argtypes)})

is the ctypes library of that source (one per process), or None when no C compiler works (the
caller runs its numba kernel; one warning per process) or IDENT_FRAMEWORK_NATIVE=0. The
compiler is `$CC` or the first of cc, gcc, clang; builds are cached in
`$XDG_CACHE_HOME/ident_framework/native/` (else a private temp folder), keyed by source, flags,
compiler and CPU. `numba_for_fallback()` imports numba, fork-safe, for the fallback kernels.

Rationale (flags, numba set-up, cost): docs/design.md#compiled-kernels
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import platform
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from importlib import resources
from pathlib import Path
from typing import Any

SWITCH = "IDENT_FRAMEWORK_NATIVE"  # "0": the numba kernels
FLAGS = ("-std=c99", "-O2", "-fPIC", "-shared", "-pthread", "-ffp-contract=off", "-march=native")
PORTABLE_FLAGS = FLAGS[:-1]  # where the compiler refuses -march=native
VARIANTS = (FLAGS, PORTABLE_FLAGS)
COMPILERS = ("cc", "gcc", "clang")  # tried in this order when CC is not set
Signatures = Mapping[str, tuple[Any, Sequence[Any]]]  # function -> (restype, argtypes)

log = logging.getLogger(__name__)
_lock = threading.Lock()
_libraries: dict[tuple[str, str], ctypes.CDLL | None] = {}
_compilers: dict[str, tuple[list[str], bytes]] = {}  # $CC -> (command, its --version)
_warned = False


class BuildError(Exception):
    """A kernel cannot be built, or loaded from anywhere."""


class NoCompiler(BuildError):
    """No C compiler answers."""


def enabled() -> bool:
    """Whether the C kernels are wanted (IDENT_FRAMEWORK_NATIVE is not "0")."""
    return os.environ.get(SWITCH, "").strip() != "0"


def compiler_found() -> bool:
    """Whether a C compiler answers (`$CC`, else cc, gcc or clang)."""
    try:
        _compiler()
    except NoCompiler:
        return False
    return True


def load(package: str, source: str, signatures: Signatures) -> ctypes.CDLL | None:
    """The library of C file `source` of `package`, its functions typed by `signatures`; None
    where the C kernels are switched off or cannot be built (see the module doc)."""
    if not enabled():
        return None
    with _lock:
        key = (package, source)
        if key not in _libraries:
            try:
                text = resources.files(package).joinpath(source).read_bytes()
                library = _build_and_load(Path(source).stem, text)
                for name, (restype, argtypes) in signatures.items():
                    function = getattr(library, name)
                    function.restype, function.argtypes = restype, list(argtypes)
            except (BuildError, OSError, AttributeError) as error:
                _warn_once(str(error) if isinstance(error, NoCompiler) else f"{source}: {error}")
                library = None
            _libraries[key] = library
        return _libraries[key]


def _warn_once(reason: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        log.warning(
            "ident_framework: C kernels unavailable, the numba kernels run instead (~0.3 s more "
            "start-up per process): %s. Set CC to a working C compiler, or %s=0 to use numba "
            "without this warning.",
            reason,
            SWITCH,
        )


def _build_and_load(name: str, source: bytes) -> ctypes.CDLL:
    """The library of `source`: loaded from the first cache folder that has it, else built
    (with `FLAGS`, or `PORTABLE_FLAGS` where -march=native is refused) into the first that can
    take it."""
    command, version = _compiler()
    files = [(flags, f"{name}-{_key(source, command, flags, version)}.so") for flags in VARIANTS]
    problems = []
    for folder in cache_folders():
        try:
            for _, file in files:
                if (folder / file).is_file():
                    try:
                        return ctypes.CDLL(str(folder / file))
                    except OSError:  # damaged, or not loadable from this folder: build again
                        pass
            _ensure_folder(folder)
            for i, (flags, file) in enumerate(files):
                try:
                    _compile(command, flags, source, folder / file)
                except BuildError:
                    if i == len(files) - 1:
                        raise
                    continue  # e.g. a compiler without -march=native: the portable flags
                return ctypes.CDLL(str(folder / file))
        except OSError as error:  # this folder cannot be written, or its files loaded
            problems.append(f"{folder}: {error}")
    raise BuildError("; ".join(problems))


def _key(source: bytes, command: list[str], flags: tuple[str, ...], version: bytes) -> str:
    """What a built library depends on: source, compiler and flags, machine and CPU."""
    parts = [source, " ".join([*command, *flags]).encode(), version, _machine().encode()]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:20]


def cache_folders() -> list[Path]:
    """Where built kernels are kept, in order of preference."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset or relative (the XDG spec says: ignore it)
        base = os.path.join(os.path.expanduser("~"), ".cache")
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    private = Path(tempfile.gettempdir()) / f"ident_framework-native-{uid}"
    return [Path(base) / "ident_framework" / "native", private]


def _ensure_folder(folder: Path) -> None:
    """Make `folder`; the temp dir's private one must be ours and closed to others (another
    user could otherwise plant a library there)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.parent == Path(tempfile.gettempdir()) and hasattr(os, "getuid"):
        info = folder.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
            raise PermissionError(f"{folder} is not a private folder of this user")


def _compile(command: list[str], flags: tuple[str, ...], source: bytes, path: Path) -> None:
    """Compile C `source` into the shared library `path` (a temporary file renamed into
    place). OSError: the folder cannot be written; BuildError: the compiler failed."""
    import subprocess  # here: a command that builds nothing need not import it

    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".so", dir=path.parent)
    os.close(handle)
    try:
        argv = [*command, *flags, "-o", temporary, "-x", "c", "-", "-lm"]
        try:
            done = subprocess.run(argv, input=source, capture_output=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise BuildError(f"{command[0]} failed: {error}") from None
        if done.returncode != 0:
            lines = done.stderr.decode(errors="replace").splitlines()
            first = next((line for line in lines if "error" in line), lines[0] if lines else "")
            raise BuildError(f"{' '.join(command)} failed: {first.strip()[:300]}")
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _compiler() -> tuple[list[str], bytes]:
    """(command, its `--version` output) of the C compiler: $CC, else cc, gcc or clang."""
    import shlex
    import subprocess

    wanted = os.environ.get("CC", "").strip()
    if wanted not in _compilers:
        candidates = [shlex.split(wanted)] if wanted else [[name] for name in COMPILERS]
        for command in candidates:
            if not command or shutil.which(command[0]) is None:
                continue
            try:
                done = subprocess.run([*command, "--version"], capture_output=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0:
                _compilers[wanted] = (command, done.stdout)
                break
        else:
            tried = wanted if wanted else ", ".join(COMPILERS)
            raise NoCompiler(f"no working C compiler (tried {tried})")
    return _compilers[wanted]


# /proc/cpuinfo fields that differ between the cores of one CPU or over time
_CPU_NOISE = {"processor", "cpu mhz", "bogomips", "core id", "apicid", "initial apicid",
              "physical id", "siblings", "cpu cores"}  # fmt: skip


@functools.cache
def _machine() -> str:
    """This machine's architecture and CPU (-march=native builds for it): the first core's
    /proc/cpuinfo entry where there is one."""
    lines = [platform.machine(), platform.processor()]
    with suppress(OSError), open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
        for line in info:
            if not line.strip():
                break
            if line.split(":")[0].strip().lower() not in _CPU_NOISE:
                lines.append(line.strip())
    return "\n".join(lines)


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread of the parent may have held it


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@functools.cache
def numba_for_fallback() -> Any:
    """The numba module, set up for the fallback kernels (see the module doc)."""
    with _scipy_hidden():  # numba's import checks SciPy's version when it finds one
        import numba

    if numba.config.THREADING_LAYER == "default":  # not chosen (NUMBA_THREADING_LAYER)
        numba.config.THREADING_LAYER = "forksafe"
    with _scipy_hidden():  # numba's first call loads its registries: their BLAS check imports SciPy
        numba.njit(cache=True)(_first_call)()
    return numba


def _first_call() -> int:  # pragma: no cover (compiled by `numba_for_fallback`)
    return 0


@contextmanager
def _scipy_hidden() -> Iterator[None]:
    """`import scipy...` raises ImportError inside (unless SciPy is imported already)."""
    if "scipy" in sys.modules:
        yield
        return
    sys.modules["scipy"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("scipy", 0) is None:
            del sys.modules["scipy"]
