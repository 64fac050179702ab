"""PipelineSpec: what Pipeline.build records so a worker can rebuild the same pipeline."""

from __future__ import annotations

import pickle
from pathlib import Path

from rtlforge.core.executor import WorkerServices
from rtlforge.core.models import Candidate, SourceFile, Task
from rtlforge.core.plugins import PluginHost
from rtlforge.sandbox.runner import SandboxRunner
from rtlforge.validate.cache import MemoryCache, SQLiteCache
from rtlforge.validate.pipeline import Pipeline, PipelineSpec, ValidateWork

TASK = Task(id="t", spec="", top="m", testbench=(SourceFile(name="tb.v", content="module tb;"
                                                                                "endmodule"),))
CANDIDATE = Candidate.from_source("module m; endmodule\n")


def host() -> PluginHost:
    return PluginHost(allow=["iverilog", "yosys"])


def test_the_spec_holds_the_build_arguments_and_rebuilds_an_equal_pipeline(
        tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    pipeline = Pipeline.build(host(), synth=True, timeout=7.5, options={"k": 1},
                              cache=SQLiteCache(cache))
    spec = pipeline.spec
    assert spec is not None
    assert (spec.simulator, spec.lint, spec.simulate, spec.synth, spec.timeout, spec.options,
            spec.cache) == ("icarus", True, True, True, 7.5, {"k": 1}, str(cache))
    assert spec.host.allow == ("iverilog", "yosys")
    rebuilt = pickle.loads(pickle.dumps(spec)).build()
    assert [v.name for v in rebuilt.validators] == [v.name for v in pipeline.validators]
    assert isinstance(rebuilt.cache, SQLiteCache) and rebuilt.cache.path == cache
    # same validators, options, tools and timeout: the same cache key, so hits are shared
    assert rebuilt.cache_key(TASK, CANDIDATE) == pipeline.cache_key(TASK, CANDIDATE)


def test_a_store_given_by_the_executor_replaces_the_specs_cache(tmp_path: Path) -> None:
    spec = Pipeline.build(host(), cache=SQLiteCache(tmp_path / "c.sqlite")).spec
    assert spec is not None
    store = MemoryCache()
    assert spec.build(cache=store).cache is store
    assert ValidateWork(pipeline=spec).build(WorkerServices(cache=store)) is not None


def test_live_objects_that_cannot_be_described_leave_no_spec() -> None:
    assert Pipeline.build(host(), runner=SandboxRunner()).spec is None

    class OwnCache(MemoryCache):
        pass

    assert Pipeline.build(host(), cache=OwnCache()).spec is None
    assert Pipeline.build(host(), cache=MemoryCache()).spec == PipelineSpec(
        host=host().spec())
