"""The ``replay`` generator: recorded samples served deterministically, offline."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

import rtlforge.plugins.generators.replay as gen_replay
from rtlforge.core.errors import TaskFormatError
from rtlforge.core.interfaces import Generation, GenerationRequest, SamplingParams
from rtlforge.core.models import Task
from rtlforge.core.plugins import PluginHost
from rtlforge.generation.base import GenerationCancelled, GenerationError
from rtlforge.plugins.generators.replay import ReplayGenerator

pytestmark = pytest.mark.timeout(60)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "replay"
JSONL = FIXTURES / "samples.jsonl"
OUTPUTS = FIXTURES / "outputs"
SHARED = Path(__file__).resolve().parents[3].parent / "shared"
RTLLM = SHARED / "benchmarks" / "rtllm"

MUX = Task(id="mux2", spec="2:1 mux", top="mux2")
ADDER = Task(id="adder", spec="adder", top="adder")


def tags(gens: list[Generation]) -> list[str]:
    """The ``// tag`` comment of each recording (or ``prose`` when there is none)."""
    return [m.group(1) if (m := re.search(r"// (\S+)", g.text)) else "prose" for g in gens]


def ask(gen: ReplayGenerator, task: Task = MUX, n: int = 1, **kwargs: object
        ) -> list[Generation]:
    [out] = gen.generate([GenerationRequest(prompt="p", task=task, **kwargs)],
                         SamplingParams(n=n))
    return out


# -------------------------------------------------------------------------- JSONL


def test_jsonl_order_is_deterministic_and_n_bounded() -> None:
    gen = ReplayGenerator(path=JSONL)
    # method, trial, iteration, sample_index, then file order
    assert tags(ask(gen, n=10)) == ["a-t1-s0", "a-t1-s1", "a-t2", "prose", "b-t1"]
    assert tags(ask(gen, n=2)) == ["a-t1-s0", "a-t1-s1"]
    assert tags(ask(gen, n=2)) == ["a-t1-s0", "a-t1-s1"]  # no cycling: same every call


def test_generations_carry_recording_and_candidate() -> None:
    gens = ask(ReplayGenerator(path=JSONL), n=5)
    first = gens[0]
    assert first.generator == "replay" and first.model == "a"
    assert first.metadata == {"task_id": "mux2", "method": "a", "trial": 1, "sample_index": 0,
                              "source": "samples.jsonl#4"}
    assert first.candidate is not None and first.candidate.task_id == "mux2"
    assert first.candidate.provenance.generator == "replay"
    prose = gens[3]
    assert prose.text == "Sorry, I only write VHDL." and prose.candidate is None
    fenced = gens[4]  # the fenced answer is extracted, the text kept whole
    assert fenced.text.startswith("```") and fenced.candidate is not None
    assert fenced.candidate.files[0].content.startswith("module mux2")


def test_missing_recordings_decline_with_empty_list() -> None:
    gen = ReplayGenerator(path=JSONL)
    other = Task(id="fifo", spec="", top="fifo")
    out = gen.generate([GenerationRequest(prompt="p", task=other),
                        GenerationRequest(prompt="p", task=MUX)], SamplingParams(n=2))
    assert out[0] == [] and len(out[1]) == 2


def test_selectors_from_constructor_and_request() -> None:
    assert tags(ask(ReplayGenerator(path=JSONL, method="b"), n=5)) == ["b-t1"]
    gen = ReplayGenerator(path=JSONL, method="a")
    assert tags(ask(gen, n=5, metadata={"trial": 2})) == ["a-t2"]
    assert tags(ask(gen, n=5, metadata={"trial": [1, 3]})) == ["a-t1-s0", "a-t1-s1", "prose"]
    assert tags(ask(gen, n=5, metadata={"method": "b"})) == ["b-t1"]  # request overrides
    adder = ReplayGenerator(path=JSONL, iteration=1)
    [g] = ask(adder, task=ADDER, n=5)
    assert "{1'b0, a}" in g.text and g.metadata["iteration"] == 1
    assert [r.method for r in gen.recordings("mux2")] == ["a"] * 4


def test_task_id_from_metadata_and_missing_task() -> None:
    gen = ReplayGenerator(path=JSONL)
    [out] = gen.generate([GenerationRequest(prompt="p", metadata={"task_id": "adder"})],
                         SamplingParams(n=1))
    assert len(out) == 1
    with pytest.raises(ValueError, match=r"request\.task"):
        gen.generate([GenerationRequest(prompt="p")], SamplingParams())


def test_bad_jsonl_and_missing_path_are_typed(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match="'trial' must be an integer"):
        ReplayGenerator(path=FIXTURES / "bad_trial.jsonl")
    with pytest.raises(TaskFormatError, match="does not exist"):
        ReplayGenerator(path=tmp_path / "nope")


# -------------------------------------------------------------------------- cycling


def test_cycle_by_request_iteration() -> None:
    gen = ReplayGenerator(path=JSONL, method="a", cycle=True)
    rounds = [tags(ask(gen, n=2, iteration=i)) for i in range(3)]
    assert rounds == [["a-t1-s0", "a-t1-s1"], ["a-t2", "prose"], ["a-t1-s0", "a-t1-s1"]]
    # Stateless in the iteration: asking again for round 1 gives round 1 again.
    assert tags(ask(gen, n=2, iteration=1)) == ["a-t2", "prose"]


def test_cycle_cursor_advances_per_call_and_resets() -> None:
    gen = ReplayGenerator(path=JSONL, method="a", cycle=True)
    seen = [tags(ask(gen, n=3)) for _ in range(3)]
    assert seen == [["a-t1-s0", "a-t1-s1", "a-t2"], ["prose", "a-t1-s0", "a-t1-s1"],
                    ["a-t2", "prose", "a-t1-s0"]]
    # Another task (here with the method selector cleared per request) has its own cursor.
    adder = [ask(gen, task=ADDER, n=1, metadata={"method": None})[0] for _ in range(3)]
    assert [g.metadata["iteration"] for g in adder] == [0, 1, 0]
    gen.reset()
    assert tags(ask(gen, n=1)) == ["a-t1-s0"]
    # A pool no larger than n is returned whole, never with repeats.
    assert tags(ask(gen, n=4)) == ["a-t1-s0", "a-t1-s1", "a-t2", "prose"]


# -------------------------------------------------------------------------- folders


def test_directory_with_tasks_matches_aliases() -> None:
    gen = ReplayGenerator(path=OUTPUTS, tasks=[MUX, ADDER])
    assert gen.task_ids == ["adder", "mux2"] and gen.unmatched == ()
    adder = ask(gen, task=ADDER, n=5)
    assert tags(adder) == ["t1", "t2"]  # t2/addr.v declares module adder
    assert [g.metadata["trial"] for g in adder] == [1, 2]
    assert adder[1].metadata["source"] == "outputs/t2/addr.v"
    assert all(g.model == "outputs" and g.candidate is not None for g in adder)


def test_directory_without_tasks_uses_file_stems() -> None:
    gen = ReplayGenerator(path=OUTPUTS)
    assert gen.task_ids == ["adder", "addr", "mux2"]
    assert tags(ask(gen, task=MUX, n=5)) == ["dir-t1", "dir-t2"]
    assert tags(ask(gen, task=ADDER, n=5)) == ["t1"]


def test_several_sources_combine() -> None:
    gen = ReplayGenerator(path=[JSONL, OUTPUTS], tasks=[MUX, ADDER], trial=2)
    assert tags(ask(gen, n=5)) == ["a-t2", "dir-t2"]


# -------------------------------------------------------------------------- plumbing


def test_usage_cancel_close_and_plugin() -> None:
    gen = ReplayGenerator(path=JSONL)
    ask(gen, n=2)
    ask(gen, task=Task(id="none", spec="", top="none"), n=2)
    usage = gen.usage()
    assert (usage.requests, usage.generations) == (2, 2)
    gen.cancel()  # nothing in flight: a no-op, the generator keeps working
    assert len(ask(gen)) == 1
    with gen:
        pass
    with pytest.raises(GenerationError, match="closed"):
        ask(gen)
    host = PluginHost(load_entrypoints=False, plugins=[("replay", gen_replay)])
    assert host.get("generator", "replay") is ReplayGenerator
    assert "ReplayGenerator(" in repr(host.create("generator", "replay", path=str(JSONL)))


def test_cancel_between_requests() -> None:
    gen = ReplayGenerator(path=JSONL)
    requests = [GenerationRequest(prompt="p", task=MUX)] * 50_000
    errors: list[BaseException] = []

    def run() -> None:
        try:
            gen.generate(requests, SamplingParams())
        except GenerationCancelled as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    while gen.usage().requests == 0:
        pass
    gen.cancel()
    thread.join(30)
    assert errors and gen.usage().requests < len(requests)


# -------------------------------------------------------------------------- RTLLM outputs


@pytest.mark.shared
def test_rtllm_chatgpt4_trials_replay_in_order() -> None:
    root = RTLLM / "_chatgpt4"
    if not root.is_dir():
        pytest.skip(f"RTLLM model outputs not found at {root}")
    gen = ReplayGenerator(path=root, tasks_root=RTLLM, cycle=True)
    assert len(gen.task_ids) == 29 and gen.unmatched == ()
    tasks = {t: Task(id=t, spec="", top=t) for t in gen.task_ids}
    requests = [GenerationRequest(prompt="p", task=tasks[t]) for t in gen.task_ids]
    out = gen.generate(requests, SamplingParams(n=5))
    assert all([g.metadata["trial"] for g in gens] == [1, 2, 3, 4, 5] for gens in out)
    assert all(g.model == "chatgpt4" for gens in out for g in gens)
    extracted = sum(g.candidate is not None for gens in out for g in gens)
    assert extracted >= 0.9 * 29 * 5
    # Sequential exploration: one sample per round walks the trials in order.
    alu = tasks["alu"]
    rounds = [ask(gen, task=alu, n=1, iteration=i)[0].metadata["trial"] for i in range(6)]
    assert rounds == [1, 2, 3, 4, 5, 1]
