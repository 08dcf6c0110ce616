"""Layers point one way: framework ← api ← webhooks / controllers ← cli; development tools aside.

``runtime`` is a framework and imports nothing of the operator built on it. ``api`` builds on the
framework alone; ``webhooks`` and ``controllers`` on both (only ``controllers.operator``, the wiring,
knows the webhooks). The kube-apiserver stand-in (``apiserver``) and the local machine provider
(``providers``) are development tools: the product never imports them, and the ``cpo`` command
line loads them only inside its development sub-commands, so the installed operator runs without
them. Nothing imports the tests or the benchmarks.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROJECT_PACKAGES = (
    "runtime",
    "api",
    "webhooks",
    "controllers",
    "cli",
    "apiserver",
    "providers",
    "demo",
    "examples",
    "tests",
    "bench",
    "hack",
)

ALLOWED: dict[str, frozenset[str]] = {
    "runtime": frozenset({"runtime"}),
    "api": frozenset({"runtime", "api"}),
    "webhooks": frozenset({"runtime", "api", "webhooks"}),
    "controllers": frozenset({"runtime", "api", "controllers"}),
    "cli": frozenset({"runtime", "api", "webhooks", "controllers", "cli"}),
    "apiserver": frozenset({"runtime", "apiserver"}),
    "providers": frozenset({"runtime", "api", "controllers", "providers"}),
    "demo": frozenset({"runtime", "api", "controllers", "providers", "demo"}),
    "examples": frozenset({"runtime", "examples"}),
    # hack/image's checks drive the image with the development tools (the provider, the demo's tour).
    "hack": frozenset({"runtime", "api", "controllers", "providers", "demo", "hack"}),
}
"""What each package may import at module level (its top-level imports)."""

MODULE_EXCEPTIONS: dict[str, frozenset[str]] = {
    "controllers/operator.py": frozenset({"webhooks"}),
}
"""Single modules allowed one more layer: the operator's wiring registers the webhooks."""

LAZY_ONLY: dict[str, frozenset[str]] = {
    "cli": frozenset({"apiserver", "providers", "demo"}),
}
"""Imports a package may make only inside a function (a development sub-command's ``run``)."""

DEVELOPMENT_TOOLS = ("apiserver", "providers", "demo")


def _imports(path: Path) -> list[tuple[str, bool]]:
    """Every absolute import of ``path`` as ``(module, at_module_level)``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((alias.name, top) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module, top))
            nested = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, top and not nested)

    visit(tree, True)
    return found


def layer_violations(root: Path) -> list[str]:
    """Every import under ``root`` that breaks the layering, as ``"file imports module"`` lines."""
    offenders = []
    for package, allowed in ALLOWED.items():
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            permitted = allowed | MODULE_EXCEPTIONS.get(relative, frozenset())
            lazy = LAZY_ONLY.get(package, frozenset())
            for module, top in _imports(path):
                layer = module.split(".")[0]
                if layer not in PROJECT_PACKAGES or layer in permitted:
                    continue
                if layer in lazy and not top:
                    continue
                where = "at module level " if layer in lazy else ""
                offenders.append(f"{relative} imports {module} {where}".rstrip())
    return offenders


def test_every_package_imports_only_the_layers_below_it() -> None:
    for package in ALLOWED:
        assert list((ROOT / package).rglob("*.py")), f"{package}/ has no Python files"
    assert layer_violations(ROOT) == []


def test_the_layer_check_catches_a_reverse_import(tmp_path: Path) -> None:
    for package in ALLOWED:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "runtime" / "bad.py").write_text("from controllers.controlplane import reconcile\n")
    (tmp_path / "api" / "bad.py").write_text("import webhooks\n")
    (tmp_path / "controllers" / "bad.py").write_text("from providers.localmachine import FINALIZER\n")
    (tmp_path / "providers" / "bad.py").write_text("import tests.support.poll\n")
    (tmp_path / "cli" / "bad.py").write_text(
        "from apiserver import EmbeddedServerOptions\n\ndef run():\n    import providers.localmachine\n"
    )
    assert layer_violations(tmp_path) == [
        "runtime/bad.py imports controllers.controlplane",
        "api/bad.py imports webhooks",
        "controllers/bad.py imports providers.localmachine",
        "cli/bad.py imports apiserver at module level",
        "providers/bad.py imports tests.support.poll",
    ]


def _modules_loaded_by(statement: str) -> list[str]:
    """The project modules a fresh interpreter holds after running ``statement``."""
    probe = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_the_operator_loads_no_development_tool() -> None:
    for statement in ("import controllers.operator", "import cli.__main__"):
        loaded = _modules_loaded_by(statement)
        assert "controllers.operator" in loaded or "cli.__main__" in loaded
        tools = [name for name in loaded if name.split(".")[0] in DEVELOPMENT_TOOLS]
        assert tools == [], f"{statement!r} loaded {tools}"


PRODUCT = ("runtime", "api", "controllers", "webhooks", "cli")
FORBIDDEN_IN_PRODUCT_IMPORTS = ("demo.monitor",)
PROVIDER_DOMAIN = "local.cpo.dev"


def product_violations(root: Path) -> list[str]:
    """Product files that import the quorum monitor (anywhere in the file) or name the local
    provider's annotation domain."""
    offenders = []
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            for module, _ in _imports(path):
                if any(module == f or module.startswith(f"{f}.") for f in FORBIDDEN_IN_PRODUCT_IMPORTS):
                    offenders.append(f"{relative} imports {module}")
            if PROVIDER_DOMAIN in path.read_text():
                offenders.append(f"{relative} names {PROVIDER_DOMAIN}")
    return offenders


def test_the_product_neither_imports_the_monitor_nor_reads_provider_annotations() -> None:
    assert product_violations(ROOT) == []


def test_the_product_check_catches_the_monitor_and_a_provider_annotation(tmp_path: Path) -> None:
    for package in PRODUCT:
        (tmp_path / package).mkdir()
    (tmp_path / "controllers" / "watch.py").write_text("from demo.monitor import QuorumMonitor\n")
    (tmp_path / "cli" / "lazy.py").write_text("def run():\n    import demo.monitor\n")
    (tmp_path / "api" / "names.py").write_text('PEER = "local.cpo.dev/etcd-peer-url"\n')
    assert product_violations(tmp_path) == [
        "api/names.py names local.cpo.dev",
        "controllers/watch.py imports demo.monitor",
        "cli/lazy.py imports demo.monitor",
    ]
