"""The package's import floors, read from its source with ``ast`` so that they cannot regress.

From the ground up: ``common`` (errors, faults, locks, files, checks, markers) and ``version`` ->
``corpus``, ``nn``, ``data`` -> ``models`` -> ``cpu_speedups`` (the readers never import it) ->
``eval``, ``viz`` -> the library API (``training``,
``api``, ``api_prepare``, ``serve``) -> ``demo`` -> ``commands`` -> ``cli``. An import (at the top of a module or inside
a function) never runs up a floor (the package root, whose lazy face imports the API, counts
as the API's floor); no command imports another; modules do not import each
other in a cycle; ``corpus`` never imports torch; only ``viz/callback.py`` of the viz modules
loads Lightning.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "attentive_reader"

# Floor of each part of the package (a module, or a subpackage with all its modules).
FLOORS: dict[str, int] = {
    "common": 0,
    "version": 0,
    "corpus": 1,
    "nn": 1,
    "data": 1,
    "models": 2,
    "cpu_speedups": 3,
    "eval": 4,
    "viz": 4,
    "training": 5,
    "api": 5,
    "api_prepare": 5,
    "serve": 5,
    "demo": 6,
    "commands": 7,
    "cli": 8,
}


@dataclass(frozen=True)
class Import:
    """One import of a package module by another."""

    source: str  # importing module, e.g. "attentive_reader.viz.html"
    target: str  # imported module or name, e.g. "attentive_reader.viz.heatmap"
    line: int
    top_level: bool  # at module level (not inside a function), TYPE_CHECKING blocks included


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path = PACKAGE) -> list[Import]:
    """Every import statement in ``path`` (a module of the package at ``root``), with
    relative imports resolved."""
    source = module_name(path, root)
    package = source if path.name == "__init__.py" else source.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []

    def visit(node: ast.AST, top_level: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = top_level and not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            )
            if isinstance(child, ast.Import):
                found.extend(Import(source, a.name, child.lineno, top_level) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    module = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    module = child.module or ""
                found.append(Import(source, module, child.lineno, top_level))
                # ``from attentive_reader.viz import html`` imports the module viz.html.
                for alias in child.names:
                    stem = root.parent / f"{module}.{alias.name}".replace(".", "/")
                    if stem.is_dir() or stem.with_suffix(".py").is_file():
                        found.append(
                            Import(source, f"{module}.{alias.name}", child.lineno, top_level)
                        )
            visit(child, nested)

    visit(tree, True)
    return found


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def part_of(module: str) -> str | None:
    """``attentive_reader.viz.html`` -> ``viz``; the package root -> ``None``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "attentive_reader" else None


def internal_imports() -> list[Import]:
    return [
        i
        for path in package_modules().values()
        for i in imports_of(path)
        if i.target.split(".")[0] == "attentive_reader"
    ]


def test_every_part_of_the_package_has_a_floor():
    parts = {part_of(m) for m in package_modules()} - {None}
    unplaced = sorted(parts - set(FLOORS))
    assert not unplaced, f"add {unplaced} to FLOORS in {Path(__file__).name}"


# The package's top level: the lazy face, the console entry, the API, the version and the demo;
# everything else lives in a room (a subpackage) that says what it is.
MAX_TOP_LEVEL_MODULES = 10


def test_the_top_level_keeps_few_modules():
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"{len(top)} top-level modules: {top}"


def test_scripts_hold_benchmarks_not_the_toolkit():
    """What users run is an ``attentive-reader`` command; ``scripts/`` keeps the benchmarks
    and the GPU check, under a cap that a new one-off script would break."""
    scripts = PACKAGE.parent / "scripts"
    files = sorted(p for p in scripts.rglob("*") if p.suffix in (".py", ".sh"))
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)
    assert files and lines <= 3500, f"scripts/ holds {lines} lines"


def test_no_import_runs_up_a_floor():
    upward = []
    for i in internal_imports():
        source, target = part_of(i.source), part_of(i.target)
        if source is None:  # the package root's lazy face imports the API
            continue
        # The package root is the API's face (the API's floor): lower floors import ``version``.
        target_floor = FLOORS["api"] if target is None else FLOORS[target]
        if target_floor > FLOORS.get(source, -1):
            upward.append(f"{i.source}:{i.line} imports {i.target}")
    assert not upward, "imports that run up a floor:\n" + "\n".join(upward)


# Known to break the rule, owned by another change in flight: merge prints its result with
# preprocess's table (to move into the library with the preprocessing driver, issue 13). An
# entry that no longer occurs fails the test, so the list only shrinks.
KNOWN_COMMAND_IMPORTS: set[tuple[str, str]] = set()


def test_no_module_getattr_and_no_context_variables():
    """No module ``__getattr__`` (a shim re-exporting moved names) outside the package root's
    lazy face, and no ``ContextVar`` (a hidden channel between callers): state is passed as
    arguments and names are imported from the module that defines them."""
    bad = []
    for name, path in package_modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                if name != "attentive_reader":
                    bad.append(f"{name}:{node.lineno} defines __getattr__")
        for node in ast.walk(tree):
            if isinstance(node, (ast.Name, ast.Attribute)):
                if (node.id if isinstance(node, ast.Name) else node.attr) == "ContextVar":
                    bad.append(f"{name}:{node.lineno} uses a ContextVar")
    assert not bad, "\n".join(bad)


def test_renames_into_place_and_long_functions_live_in_few_places():
    """Every rename of a finished file or folder into place goes through ``fileio``
    (``replacing`` / ``place``: synced, then renamed), and no function of the package is
    longer than 80 lines."""
    renames, long = [], []
    for name, path in package_modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                if (
                    isinstance(owner, ast.Name)
                    and owner.id in {"os", "shutil"}
                    and node.func.attr in {"replace", "rename", "renames", "move"}
                ):
                    renames.append(f"{name}:{node.lineno}")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.end_lineno - node.lineno + 1 > 80:
                    long.append(f"{name}:{node.lineno} {node.name}")
    assert {r.split(":")[0] for r in renames} <= {"attentive_reader.common.fileio"}, renames
    assert not long, "functions over 80 lines:\n" + "\n".join(long)


def test_no_command_imports_another_and_demo_imports_no_command():
    bad = set()
    for i in internal_imports():
        source, target = i.source.split("."), i.target.split(".")
        if target[1:2] != ["commands"] or i.target == "attentive_reader.commands":
            continue
        if source[1:2] == ["commands"] and source[:3] != target[:3]:
            bad.add((i.source, i.target))
        if source[1:2] == ["demo"]:
            bad.add((i.source, i.target))
    assert not bad - KNOWN_COMMAND_IMPORTS, sorted(bad - KNOWN_COMMAND_IMPORTS)
    assert not KNOWN_COMMAND_IMPORTS - bad, (
        f"fixed: remove {sorted(KNOWN_COMMAND_IMPORTS - bad)} from KNOWN_COMMAND_IMPORTS"
    )


def test_no_import_cycles_between_modules_or_parts():
    modules = package_modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    parts: dict[str, set[str]] = {}
    for i in internal_imports():
        target = i.target if i.target in modules else i.target.rpartition(".")[0]
        if target in modules and target != i.source and i.top_level:
            graph[i.source].add(target)
        source_part, target_part = part_of(i.source), part_of(i.target)
        if source_part and target_part and source_part != target_part:
            parts.setdefault(source_part, set()).add(target_part)
    # Two parts of one floor may not import each other (e.g. eval <-> viz).
    mutual = sorted(f"{a} <-> {b}" for a in parts for b in parts[a] if a in parts.get(b, ()))
    assert not mutual, f"parts importing each other: {mutual}"

    # A module-level cycle (depth-first search for a back edge).
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for nxt in sorted(graph[module]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[module] = 2
        return None

    for module in graph:
        if module not in state and (cycle := visit(module)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_corpus_never_imports_torch_or_the_tensor_side():
    bad = []
    for path in sorted((PACKAGE / "corpus").rglob("*.py")):
        for i in imports_of(path):
            root = i.target.split(".")[0]
            if root in ("torch", "pytorch_lightning", "lightning") or part_of(i.target) in (
                "data",
                "nn",
                "models",
            ):
                bad.append(f"{i.source}:{i.line} imports {i.target}")
    assert not bad, "\n".join(bad)


def test_only_the_callback_imports_lightning_among_the_viz_modules():
    bad = [
        f"{i.source}:{i.line}"
        for path in sorted((PACKAGE / "viz").rglob("*.py"))
        if path.name != "callback.py"
        for i in imports_of(path)
        if i.top_level and i.target.split(".")[0] in ("pytorch_lightning", "lightning")
    ]
    assert not bad, f"viz modules importing Lightning: {bad}"
    # And none reaches it through another module: importing the viz package loads neither
    # Lightning nor torch.
    probe = (
        "import sys, attentive_reader.viz, attentive_reader.viz.heatmap;"
        "print(sorted(m for m in ('pytorch_lightning', 'torch', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_floor_checker_sees_every_kind_of_import(tmp_path):
    """The checker itself: TYPE_CHECKING, function-level and relative imports are found."""
    root = tmp_path / "attentive_reader"
    (root / "viz").mkdir(parents=True)
    (root / "commands").mkdir()
    (root / "commands" / "heatmap.py").write_text("")
    path = root / "viz" / "probe.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from attentive_reader.demo import DemoOptions\n"
        "def f():\n    from ..commands import heatmap\n"
    )
    found = {(i.source, i.target, i.top_level) for i in imports_of(path, root)}
    assert ("attentive_reader.viz.probe", "attentive_reader.demo", True) in found
    assert ("attentive_reader.viz.probe", "attentive_reader.commands", False) in found
    assert ("attentive_reader.viz.probe", "attentive_reader.commands.heatmap", False) in found


# What belongs in the docs and the commit messages, not beside the code: a comment says why a
# line is as it is; measurements, machines, dates and history go stale the day they are written.
NARRATION = {
    "an issue number": r"\bissues? \d+",
    "a date": r"\b20\d\d-[01]\d-[0-3]\d\b",
    "a machine": r"\b(H100|H200|A100|V100|EPYC|Xeon|Ryzen|Threadripper)\b",
    "a throughput": r"\d[\d,.]*\s*(examples|tokens|stories|questions|steps|batches)/s\b"
    r"|\b\d+(\.\d+)?\s?ms\b",
    "a measured accuracy": r"\b(validation|test|val_acc)\b[^\n]{0,40}\b\d*\.\d{2,}\b|\d+\.\d+%",
}
CONFIGS = PACKAGE.parent / "configs"


def narration_in(text: str) -> list[str]:
    """``line: what`` for each line of ``text`` that narrates (``NARRATION``)."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for what, pattern in NARRATION.items():
            if re.search(pattern, line, flags=re.IGNORECASE):
                found.append(f"{number}: {what}: {line.strip()}")
    return found


def test_package_code_and_configs_hold_no_figures_machines_dates_or_issue_numbers():
    files = [*PACKAGE.rglob("*.py"), *CONFIGS.rglob("*.yaml")]
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{hit}"
        for path in sorted(files)
        for hit in narration_in(path.read_text(encoding="utf-8"))
    ]
    assert not found, "move these to the docs:\n" + "\n".join(found)


def test_the_narration_check_sees_each_kind():
    text = (
        "# fixed in issue 38\n"
        "# measured 2026-12-04\n"
        "# on an H200\n"
        "# 121.6 examples/s, 4.5 ms a step\n"
        "# validation 0.672 after 5 epochs; greedy 34.0%\n"
        "x = 1  # the scale of the 95% interval is 1.96\n"
    )
    assert [hit.split(":")[0:2] for hit in narration_in(text)] == [
        ["1", " an issue number"],
        ["2", " a date"],
        ["3", " a machine"],
        ["4", " a throughput"],
        ["5", " a measured accuracy"],
    ]
