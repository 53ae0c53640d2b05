"""The docs' commands run as written: every `python -m ident_framework ...` line of a ```bash
block of docs/getting-started.md, in order, from one empty folder, must exit 0 and leave the
files the `<!-- expect: ... -->` comment after its block names; then README's (the same
commands are not run twice). Also fast checks: README fits 200 lines and its quick-start block
holds exactly the two commands `.ci/run` reads; every relative link of README and docs/ reaches
a file (and a heading, with an anchor); every repository path the docs name in backticks exists
(so a module move shows here); `.ci/run` builds the site.

The commands run with HOME in the test's folder (a rehearsal records its pass under
~/.ident_framework), the user's caches kept (compiled kernels, matplotlib's font list)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from ident_framework.testing.cli import REPO

DOCS = REPO / "docs"
GETTING_STARTED = DOCS / "getting-started.md"
README = REPO / "README.md"
COMMAND = "python -m ident_framework"
EXPECT = re.compile(r"<!--\s*expect:(.*?)-->", re.S)


def bash_blocks(text: str) -> list[tuple[str, str]]:
    """(code, the text after it up to the next block) of every ```bash block of `text`."""
    parts = re.split(r"^```bash\n(.*?)^```\n", text, flags=re.S | re.M)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def commands(code: str) -> list[str]:
    """The `python -m ident_framework` commands of a block, continuation lines joined."""
    lines = re.sub(r"\\\n\s*", "", code).splitlines()
    return [line.strip() for line in lines if line.strip().startswith(COMMAND)]


def documented_runs(path: Path) -> list[tuple[str, list[str]]]:
    """(command, the files it promises) of every command of `path`, in order; the promise
    (an `expect` comment right after a block) belongs to the block's last command."""
    runs: list[tuple[str, list[str]]] = []
    for code, after in bash_blocks(path.read_text()):
        found = commands(code)
        expect = EXPECT.match(after.lstrip())
        promised = expect.group(1).split() if expect else []
        runs += [(command, promised if k == len(found) - 1 else []) for k, command in
                 enumerate(found)]  # fmt: skip
    return runs


def quick_start_commands(text: str) -> list[str]:
    """What `.ci/run` reads: the non-comment lines of the first code block after
    "## Quick start"."""
    section = text.split("\n## Quick start", 1)[1]
    block = section.split("```", 2)[1].split("\n", 1)[1]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_readme_fits_200_lines():
    assert len(README.read_text().splitlines()) <= 200


def test_readme_quick_start_holds_the_two_ci_commands():
    found = quick_start_commands(README.read_text())
    assert len(found) == 2, found
    assert found[0].startswith("pip install -e . && python -m ident_framework")
    assert "python -m pytest" in found[1]


def test_the_docs_promise_files_and_run_commands():
    runs = documented_runs(GETTING_STARTED)
    assert len(runs) >= 4 and all(command.startswith(COMMAND) for command, _ in runs)
    assert any("sample:ident" in command for command, _ in runs)
    assert sum(bool(files) for _, files in runs) >= 4
    assert len(documented_runs(README)) >= 5


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension (mkdocs) gives a heading."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*?)\s*$", text, re.M)}


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def broken_links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if file.startswith("reference/"):  # the API reference, generated at build time
            continue
        if not resolved.exists():
            broken.append(f"{target} (no {resolved.relative_to(REPO)})")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target} (no heading #{anchor})")
    return broken


def test_every_link_of_readme_and_docs_resolves():
    assert all(LINK.findall(README.read_text()) for _ in [0])
    broken = {str(p.relative_to(REPO)): b for p in pages() if (b := broken_links(p))}
    assert not broken, broken


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# A heading (`x`)\n")
    page.write_text("[a](there.md#a-heading-x) [b](there.md#nope) [c](missing.md)\n")
    assert [b.split(" ")[0] for b in broken_links_in(page)] == ["there.md#nope", "missing.md"]


def broken_links_in(page: Path) -> list[str]:
    global REPO
    saved, REPO = REPO, page.parent  # noqa: PLW0603
    try:
        return broken_links(page)
    finally:
        REPO = saved


# `path/to/file.py` or `path/module.Name` in backticks: files of the repository (root or
# package relative); run-directory outputs are not.
REPO_PATH = re.compile(r"`((?:[\w-]+/)+[\w-]+)(\.(?:py|yaml|c|toml|md)\b|\.[A-Za-z_]\w*)?[`:\s]")
OUTPUTS = ("online/", "fleet/", "runs/", "outputs/", "plots/", "residual/", "multirun/")


def test_repository_paths_the_docs_name_exist():
    missing = []
    for page in pages():
        for stem, suffix in REPO_PATH.findall(page.read_text()):
            if stem.startswith(OUTPUTS) or not suffix:
                continue
            name = stem + (suffix if suffix in (".py", ".yaml", ".c", ".toml", ".md") else ".py")
            if not any((base / name).exists() for base in (REPO, REPO / "ident_framework")):
                missing.append(f"{page.relative_to(REPO)}: {stem}{suffix}")
    assert not missing, missing


def test_code_fences_are_closed():
    odd = [
        str(p.relative_to(REPO))
        for p in pages()
        if sum(line.lstrip().startswith("```") for line in p.read_text().splitlines()) % 2
    ]
    assert not odd, odd


def test_ci_builds_the_docs_strictly():
    ci = (REPO / ".ci" / "run").read_text()
    assert '".[docs]"' in ci and "mkdocs build --strict" in ci


@pytest.fixture(scope="module")
def environment(tmp_path_factory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=cache, MPLBACKEND="Agg")
    env["MPLCONFIGDIR"] = os.environ.get("MPLCONFIGDIR") or str(
        Path.home() / ".config" / "matplotlib"
    )
    env.pop("HYDRA_FULL_ERROR", None)
    return env


@pytest.mark.slow
def test_getting_started_and_readme_commands_run_as_written(tmp_path, environment):
    done: set[str] = set()
    for path in (GETTING_STARTED, README):
        for command, promised in documented_runs(path):
            if command in done:
                continue
            arguments = shlex.split(command)
            result = subprocess.run(
                [sys.executable, *arguments[1:]], cwd=tmp_path, env=environment,
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert result.returncode == 0, f"{path.name}: {command}\n{result.stderr[-3000:]}"
            missing = [name for name in promised if not (tmp_path / name).exists()]
            assert not missing, f"{path.name}: {command} left no {missing}"
            done.add(command)
