"""The scripted generator: per-agent steps, prompt conditions, the three file spellings,
word-count token accounting, and a typed error once a script is exhausted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rtlforge.core.errors import InfraError, TaskFormatError
from rtlforge.core.interfaces import GenerationRequest, SamplingParams
from rtlforge.core.models import Task
from rtlforge.generation.base import GenerationError
from rtlforge.plugins.generators import scripted
from rtlforge.plugins.generators.scripted import ScriptedGenerator, ScriptExhausted
from rtlforge.testing.builders import make_plugin_host

TASK = Task(id="t1", spec="spec", top="dut")
WRONG = "```verilog\nmodule dut(output y); assign y = 1'b0; endmodule\n```"
RIGHT = "```verilog\nmodule dut(output y); assign y = 1'b1; endmodule\n```"


def _ask(gen: ScriptedGenerator, prompt: str = "write it", agent: str | None = "fast",
         n: int = 1, task: Task = TASK, system: str | None = None) -> list[str]:
    metadata = {"agent": agent} if agent is not None else {}
    request = GenerationRequest(prompt=prompt, system=system, task=task, metadata=metadata)
    return [g.text for g in gen.generate([request], SamplingParams(n=n))[0]]


def test_steps_are_replayed_in_order_per_agent() -> None:
    gen = ScriptedGenerator(script={"t1": {"fast": [WRONG, RIGHT], "debug": [RIGHT]}})
    assert _ask(gen, agent="debug") == [RIGHT]
    assert _ask(gen) == [WRONG]
    assert _ask(gen) == [RIGHT]


def test_a_conditional_step_answers_only_when_the_prompt_carries_its_text() -> None:
    script = {"t1": {"debug": [{"text": RIGHT, "when_prompt_contains": "expected 1'b1"},
                               WRONG]}}
    gen = ScriptedGenerator(script=script)
    # the condition fails: skipped to the next (unconditional) step
    assert _ask(gen, "y is wrong", agent="debug") == [WRONG]
    gen.reset()
    assert _ask(gen, "y: expected 1'b1, observed 0", agent="debug") == [RIGHT]
    # the system text counts as part of the prompt; a list means "all of these"
    gen = ScriptedGenerator(script={"t1": {"debug": [
        {"text": RIGHT, "when_prompt_contains": ["alpha", "beta"]}, WRONG]}})
    assert _ask(gen, "beta", agent="debug", system="alpha") == [RIGHT]


def test_an_exhausted_script_raises_a_typed_generation_error() -> None:
    gen = ScriptedGenerator(script={"t1": {"fast": [WRONG]}})
    _ask(gen)
    with pytest.raises(ScriptExhausted, match="no step left"):
        _ask(gen)
    with pytest.raises(ScriptExhausted, match="no script for task 'other'"):
        _ask(gen, task=Task(id="other", spec="", top="dut"))
    assert issubclass(ScriptExhausted, GenerationError) and issubclass(ScriptExhausted,
                                                                      InfraError)
    # a condition that never holds exhausts the group too
    gen = ScriptedGenerator(script={"t1": {"fast": [{"text": RIGHT,
                                                      "when_prompt_contains": "never"}]}})
    with pytest.raises(ScriptExhausted):
        _ask(gen)


def test_wildcards_cover_any_agent_or_task_most_specific_first() -> None:
    gen = ScriptedGenerator(script={"t1": {"*": [WRONG]}, "*": {"*": [RIGHT, RIGHT]}})
    assert _ask(gen, agent="genius") == [WRONG]
    assert _ask(gen, task=Task(id="t2", spec="", top="dut"), agent=None) == [RIGHT]


def test_n_samples_take_successive_steps_and_tokens_are_words() -> None:
    gen = ScriptedGenerator(script={"t1": {"fast": [WRONG, RIGHT, WRONG]}})
    request = GenerationRequest(prompt="four words of prompt", system="two more",
                                task=TASK, metadata={"agent": "fast"})
    out = gen.generate([request], SamplingParams(n=2))[0]
    assert [g.text for g in out] == [WRONG, RIGHT]
    # the documented count: whitespace-separated words of system + prompt, and of the text
    assert [g.prompt_tokens for g in out] == [6, 6]
    assert [g.completion_tokens for g in out] == [len(WRONG.split()), len(RIGHT.split())]
    assert out[0].candidate is not None and "1'b0" in out[0].candidate.files[0].content
    usage = gen.usage()
    assert usage.requests == 1 and usage.generations == 2
    assert usage.completion_tokens == len(WRONG.split()) + len(RIGHT.split())
    assert gen.remaining("t1", "fast") == 1


def test_the_three_file_formats_are_the_same_script(tmp_path: Path) -> None:
    as_json = tmp_path / "s.json"
    as_json.write_text(json.dumps({"t1": {"fast": [WRONG, {"text": RIGHT}]}}))
    as_jsonl = tmp_path / "s.jsonl"
    as_jsonl.write_text("\n".join(json.dumps({"task_id": "t1", "agent": "fast", "text": t})
                                  for t in (WRONG, RIGHT)) + "\n")
    as_toml = tmp_path / "s.toml"
    as_toml.write_text("".join(
        f'[[step]]\ntask_id = "t1"\nagent = "fast"\ntext = """{t}"""\n\n' for t in (WRONG, RIGHT)))
    for path in (as_json, as_jsonl, as_toml):
        gen = ScriptedGenerator(path=path)
        assert _ask(gen) + _ask(gen) == [WRONG, RIGHT], path.name


def test_a_malformed_script_is_a_task_format_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"t1": {"fast": [{"txt": "typo"}]}}')
    with pytest.raises(TaskFormatError, match="not a valid script"):
        ScriptedGenerator(path=bad)
    with pytest.raises(TaskFormatError, match="cannot read"):
        ScriptedGenerator(path=tmp_path / "missing.json")


def test_registered_as_the_scripted_generator() -> None:
    host = make_plugin_host(scripted)
    gen = host.create("generator", "scripted", script={"t1": {"fast": [RIGHT]}})
    assert isinstance(gen, ScriptedGenerator) and _ask(gen) == [RIGHT]
