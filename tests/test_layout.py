"""The test tree itself: pytest's default import mode needs unique test-module basenames."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_ROOTS = (ROOT / "tests", ROOT / "plugins-contrib")


def test_test_module_basenames_are_unique() -> None:
    # Two ``test_x.py`` in different folders (without __init__.py) make collection of the whole
    # suite fail with "import file mismatch", while each folder alone still passes.
    seen: dict[str, list[str]] = defaultdict(list)
    for root in TEST_ROOTS:
        for path in root.rglob("test_*.py"):
            seen[path.name].append(str(path.relative_to(ROOT)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"test modules sharing a basename: {clashes}"
