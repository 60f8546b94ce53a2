"""The layout of the tests, read with ``ast``: what test modules share lives in helper modules
(``tests/corpus/fixtures.py``, ``tests/corpus/pipelines.py``, ``tests/hostile.py``,
``tests/trainers.py``, ...) or in a ``conftest.py``; no module imports from a ``test_*`` module
or imports another module's private (``_``) names."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.Module, module: str) -> list[tuple[int, str, str | None]]:
    """(line, module, name) of every import in ``tree`` (top level or inside a function);
    relative imports resolved against ``module``; ``name`` is None for ``import x``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: -node.level]
                base = ".".join([*package, base] if base else package)
            found += [(node.lineno, base, alias.name) for alias in node.names]
    return found


def layout_problems(root: Path) -> list[str]:
    """Imports under ``root`` (a ``tests`` folder) of a ``test_*`` module, or of a private
    name of one of its modules: ``file:line: what``."""
    problems = []
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, target, name in sorted(_imported(tree, module)):
            if target != root.name and not target.startswith(root.name + "."):
                continue
            modules = [target] if name is None else [target, f"{target}.{name}"]
            where = f"{path.relative_to(root.parent)}:{line}"
            tested = [m for m in modules if m.rsplit(".", 1)[-1].startswith("test_")]
            if tested:
                problems.append(f"{where}: imports from the test module {tested[0]}")
            elif name is not None and name.startswith("_"):
                problems.append(f"{where}: imports the private name {name} of {target}")
    return list(dict.fromkeys(problems))


def test_no_test_module_is_imported_by_another_module():
    assert layout_problems(TESTS) == []


def test_the_layout_checker_sees_every_kind_of_import(tmp_path):
    root = tmp_path / "tests"
    (root / "corpus").mkdir(parents=True)
    (root / "corpus" / "helpers.py").write_text("def ruler(): ...\n_PRIVATE = 1\n")
    (root / "corpus" / "test_a.py").write_text(
        "from tests.corpus.helpers import ruler\n"  # a helper module: fine
        "import pytest\n"  # outside the tests: fine
        "from tests.corpus.test_b import LABELS\n"  # line 3
        "from . import test_b\n"  # line 4, relative
        "def f():\n"
        "    import tests.corpus.test_b\n"  # line 6, inside a function
        "from .helpers import _PRIVATE\n"  # line 7, a private name
    )
    (root / "corpus" / "test_b.py").write_text("LABELS = ()\n")
    assert layout_problems(root) == [
        "tests/corpus/test_a.py:3: imports from the test module tests.corpus.test_b",
        "tests/corpus/test_a.py:4: imports from the test module tests.corpus.test_b",
        "tests/corpus/test_a.py:6: imports from the test module tests.corpus.test_b",
        "tests/corpus/test_a.py:7: imports the private name _PRIVATE of tests.corpus.helpers",
    ]
