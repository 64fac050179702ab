"""The README as a new user meets it: the wheel pip-installed into a fresh venv, the examples
copied with `rtlforge examples`, and every Python block of the README run as written."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: A fenced Python block (three or more backticks, closed by the same fence).
_BLOCK = re.compile(r"^(`{3,})python\n(.*?)^\1[ \t]*$", re.S | re.M)


def readme_blocks() -> list[str]:
    return [body for _, body in _BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))]


def test_the_readme_has_python_blocks_to_run() -> None:
    blocks = readme_blocks()
    assert len(blocks) >= 2 and all("rtlforge" in b for b in blocks)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel of this checkout. Its dependencies come from the test's
    own environment through a .pth line (no network here): the wheel itself is installed
    with --no-deps, so rtlforge is imported from the wheel, never from the checkout."""
    base = tmp_path_factory.mktemp("installed")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(base / "dist"), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    [wheel] = (base / "dist").glob("rtlforge-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return venv


@pytest.mark.tools
@pytest.mark.slow
def test_readme_python_blocks_run_as_written_after_pip_install(installed: Path,
                                                               tmp_path: Path) -> None:
    rtlforge = installed / "bin" / "rtlforge"
    copied = subprocess.run([str(rtlforge), "examples", str(tmp_path)], capture_output=True,
                            text=True, timeout=60)
    assert copied.returncode == 0, copied.stderr
    assert (tmp_path / "examples" / "tasks" / "add8_carry" / "task.toml").is_file()
    where = subprocess.run([str(installed / "bin" / "python"), "-c",
                            "import rtlforge; print(rtlforge.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(installed)), where  # the wheel's, not the checkout's
    for i, block in enumerate(readme_blocks()):
        run = subprocess.run([str(installed / "bin" / "python"), "-c", block], cwd=tmp_path,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, f"README block {i}:\n{block}\n{run.stderr[-3000:]}"
    again = subprocess.run([str(rtlforge), "examples", str(tmp_path)], capture_output=True,
                           text=True, timeout=60)
    assert again.returncode == 2 and "exists" in again.stderr
