"""The source library loader: duplicates and evaluation-derived sources are excluded, with
the reason recorded. Fixtures are written here, by hand, so each oracle is visible."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.behave.acquire.sources import (
    EvaluationIndex,
    load_library,
    normalised_hash,
)
from rtlforge.core.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]
BUNDLED = REPO / "examples" / "behave" / "sources"
VERILOGEVAL = REPO / "tests" / "tasks" / "fixtures" / "verilogeval"
RTLLM = REPO.parent / "shared" / "benchmarks" / "rtllm"

META = """\
id = "{id}"
title = "{title}"
language = "{language}"
file = "{file}"
provenance = "{provenance}"
licence = "Apache-2.0"
description = "{description}"
{extra}
"""


def _source(root: Path, folder: str, code: str, *, id: str | None = None,
            language: str = "python", provenance: str = "written for these tests",
            description: str = "a test source", extra: str = "",
            title: str = "test source") -> Path:
    directory = root / folder
    directory.mkdir(parents=True)
    file = "reference.py" if language == "python" else "reference.c"
    (directory / file).write_text(code)
    (directory / "meta.toml").write_text(META.format(
        id=id or folder, title=title, language=language, file=file, provenance=provenance,
        description=description, extra=extra))
    return directory


# Three made-up designs in the RTLLM layout: the descriptions are ours, written for the test.
_DESIGNS = {
    "widget_ctr": "Please act as a professional verilog designer. Build a widget counter that "
                  "increments its seven bit tally whenever the strobe input rises and wraps "
                  "back to zero after reaching one hundred and twenty seven. Give me the "
                  "complete code.",
    "blinker": "Please act as a professional verilog designer. Make the lamp output toggle "
               "once every sixteen clock cycles while enable is high. Give me the complete "
               "code.",
    "mux_tree": "Please act as a professional verilog designer. Select one of eight data "
                "bytes with a three bit select signal using a balanced tree of two input "
                "multiplexers. Give me the complete code.",
}


#: A sentence all three share: boilerplate, which alone must not exclude a source.
_SHARED_SENTENCE = ("Every register must reset synchronously when the active high reset input "
                    "is asserted at a rising clock edge.")


@pytest.fixture
def eval_set(tmp_path: Path) -> Path:
    root = tmp_path / "rtllm_like"
    for name, text in _DESIGNS.items():
        text = f"{text} {_SHARED_SENTENCE}"
        design = root / "Misc" / name
        design.mkdir(parents=True)
        (design / "design_description.txt").write_text(text)
        (design / f"verified_{name}.v").write_text(f"module {name}(); endmodule\n")
    return root


def test_bundled_library_is_clean_against_the_evaluation_sets_we_hold() -> None:
    paths = [VERILOGEVAL] + ([RTLLM] if RTLLM.is_dir() else [])
    index = EvaluationIndex.from_paths(paths)
    load = load_library(BUNDLED, evaluation=index)
    assert load.exclusions == ()
    assert 8 <= len(load.sources) <= 12
    for source in load.sources:
        assert source.meta.licence and source.meta.provenance
        assert source.meta.interface, f"{source.id} has no interface hints"
    assert {s.meta.language for s in load.sources} == {"python", "c"}


def test_normalised_hash_ignores_comments_and_whitespace_only() -> None:
    a = "def f(x):\n    return x + 1  # add one\n"
    b = "# header\ndef f(x):\n\n\treturn   x + 1\n"
    c = "def f(x):\n    return x + 2\n"
    assert normalised_hash(a, "python") == normalised_hash(b, "python")
    assert normalised_hash(a, "python") != normalised_hash(c, "python")
    c1 = "int f(int x) { /* one */ return x + 1; } // done"
    c2 = "int f(int x)\n{\n    return x + 1;\n}\n"
    assert normalised_hash(c1, "c") == normalised_hash(c2, "c")


def test_exact_duplicate_after_normalising_is_excluded_with_the_first_kept(
        tmp_path: Path) -> None:
    root = tmp_path / "lib"
    _source(root, "a_original", "def f(x):\n    return x ^ (x >> 1)\n")
    _source(root, "b_copy", "# the same thing, reformatted\ndef f(x):\n\n  return x ^ (x >> 1)\n")
    _source(root, "c_other", "def f(x):\n    return x ^ (x >> 2)\n")
    load = load_library(root)
    assert [s.id for s in load.sources] == ["a_original", "c_other"]
    (exclusion,) = load.exclusions
    assert (exclusion.source_id, exclusion.reason, exclusion.evidence) == (
        "b_copy", "duplicate", "a_original")


def test_duplicate_id_is_excluded(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    _source(root, "one", "def f():\n    return 1\n", id="same")
    _source(root, "two", "def f():\n    return 2\n", id="same")
    load = load_library(root)
    assert [s.directory.name for s in load.sources] == ["one"]
    assert [(e.reason, e.evidence) for e in load.exclusions] == [("duplicate_id", "one")]


def test_declared_provenance_naming_an_evaluation_set_is_excluded(
        tmp_path: Path, eval_set: Path) -> None:
    root = tmp_path / "lib"
    _source(root, "from_rtllm", "def f(x):\n    return x\n",
            provenance="adapted from the RTLLM v2 benchmark")
    _source(root, "from_ve", "def g(x):\n    return -x\n",
            provenance="translated from a VerilogEval problem")
    _source(root, "from_design", "def h(x):\n    return x * 3\n",
            extra='derived_from = ["the blinker example"]')
    # "mux" and "tree" occur in provenance, but design names only count in derived_from
    _source(root, "innocent", "def k(x):\n    return x * 5\n",
            provenance="our own mux tree exercise, like a blinker")
    load = load_library(root, evaluation=EvaluationIndex.from_paths([eval_set]))
    assert [s.id for s in load.sources] == ["innocent"]
    got = {e.source_id: (e.reason, e.evidence) for e in load.exclusions}
    assert got == {"from_rtllm": ("evaluation_provenance", "rtllm"),
                   "from_ve": ("evaluation_provenance", "verilogeval"),
                   "from_design": ("evaluation_provenance", "blinker")}


def test_text_copied_from_an_evaluation_description_is_excluded_by_fingerprint(
        tmp_path: Path, eval_set: Path) -> None:
    root = tmp_path / "lib"
    copied = ("Counts strobes. Build a widget counter that increments its seven bit tally "
              "whenever the strobe input rises and wraps back to zero.")
    _source(root, "laundered", "def tally(n):\n    return (n + 1) % 128\n",
            provenance="written for these tests", description=copied)
    # shares only the sentence every design has (boilerplate) and single words: kept
    _source(root, "honest", "def lamp(t):\n    return (t // 16) % 2\n",
            description=f"A lamp that toggles every sixteen ticks. {_SHARED_SENTENCE}")
    load = load_library(root, evaluation=EvaluationIndex.from_paths([eval_set]))
    assert [s.id for s in load.sources] == ["honest"]
    (exclusion,) = load.exclusions
    assert exclusion.reason == "evaluation_fingerprint"
    assert exclusion.evidence == "rtllm:widget_ctr/design_description.txt"


def test_verilogeval_layout_is_indexed() -> None:
    index = EvaluationIndex.from_paths([VERILOGEVAL])
    assert {"prob001_xor2", "xor2", "count4"} <= index.design_names
    prompt = (VERILOGEVAL / "dataset_spec-to-rtl" / "Prob002_count4_prompt.txt").read_text()
    hit = index.overlap(prompt)
    assert hit is not None and hit[0].startswith("verilogeval:") and "count4" in hit[0]


@pytest.mark.shared
@pytest.mark.skipif(not RTLLM.is_dir(), reason=f"RTLLM data not found at {RTLLM}")
def test_a_copied_rtllm_description_is_caught(tmp_path: Path) -> None:
    text = (RTLLM / "Arithmetic" / "Adder" / "adder_8bit" / "design_description.txt"
            ).read_text().replace('"', "'").replace("\n", " ")
    root = tmp_path / "lib"
    _source(root, "adder", "def add(a, b):\n    return (a + b) & 0x1FF\n", description=text)
    load = load_library(root, evaluation=EvaluationIndex.from_paths([RTLLM]))
    assert [(e.reason, e.evidence) for e in load.exclusions] == [
        ("evaluation_fingerprint", "rtllm:adder_8bit/design_description.txt")]


def test_bad_metadata_and_missing_files_are_recorded_not_raised(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    bad = _source(root, "bad_key", "def f():\n    return 0\n", extra='colour = "red"')
    missing = _source(root, "no_file", "def f():\n    return 1\n")
    (missing / "reference.py").unlink()
    (root / "not_toml").mkdir()
    (root / "not_toml" / "meta.toml").write_text("id = [")
    (root / "notes").mkdir()  # no meta.toml: not a source folder, ignored
    load = load_library(root)
    assert load.sources == ()
    got = sorted((Path(e.directory).name, e.reason) for e in load.exclusions)
    assert got == [("bad_key", "invalid_metadata"), ("no_file", "unreadable"),
                   ("not_toml", "invalid_metadata")]
    assert "colour" in next(e.message for e in load.exclusions if e.directory == str(bad))


def test_an_evaluation_path_that_indexes_nothing_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="holds no RTLLM design"):
        EvaluationIndex.from_paths([tmp_path])
    with pytest.raises(ConfigError, match="not a folder"):
        EvaluationIndex.from_paths([tmp_path / "absent"])
