"""Adapters from rtlforge rewards to RL trainers: TRL ``reward_funcs`` and verl ``compute_score``.

Trainers copy reward functions into worker processes (multiprocessing, Ray), and a live reward
holds thread pools, caches and a pipeline that must not travel. So an adapter carries only a
small :class:`RewardSpec` and builds the reward lazily, once per process, on first call. Neither
adapter imports torch, transformers, trl or verl: each is just a callable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core.errors import ConfigError
from rtlforge.core.interfaces import Reward
from rtlforge.core.options import PluginSpec, validate_options
from rtlforge.core.untrusted import load_json
from rtlforge.rewards.columns import completion_text
from rtlforge.rewards.ppa import PPAReward

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost


#: What a builder supplies itself, and only to rewards whose options model takes it.
CONTEXT_OPTIONS = ("tasks", "pipeline", "estimator", "executor")


def reward_options(host: PluginHost, name: str) -> set[str]:
    """The option names reward ``name`` accepts (its options model's public names)."""
    return {o.name for o in host.options(kind="reward", name=name)}


def check_reward_options(host: PluginHost, name: str, options: Mapping[str, Any],
                         *, supplied: Iterable[str] = CONTEXT_OPTIONS) -> None:
    """Check a reward's name and the caller's options before anything is built.

    The options the builder supplies itself (``supplied``: tasks, pipeline, estimator) may be
    missing here; any other problem is a :class:`PluginOptionsError` naming the option.
    """
    validate_options(host.options_model("reward", name), dict(options), what=f"reward {name!r}",
                     supplied=supplied)


def create_reward(host: PluginHost, name: str, options: Mapping[str, Any] | None = None, *,
                  tasks: Any = None, pipeline: Callable[[], Any] | None = None,
                  estimator: Callable[[], Any] | None = None,
                  executor: Callable[[], Any] | None = None) -> Reward:
    """Reward ``name`` with ``options``, plus the context it takes and nothing more.

    ``tasks``, a ``pipeline``, an ``executor`` and (for a reward that ``needs_ppa``) an
    ``estimator`` go only to a reward whose options model has them: a third-party reward with
    options of its own gets exactly those. ``pipeline``, ``estimator`` and ``executor`` are
    factories, so what a reward does not take is never built. A reward that takes ``tasks``
    without one being given is a ConfigError.
    """
    kwargs: dict[str, Any] = dict(options or {})
    accepted = reward_options(host, name)
    factory = host.get("reward", name)
    if "tasks" in accepted and "tasks" not in kwargs:
        if tasks is None:
            raise ConfigError(f"reward {name!r} scores against tasks: give tasks=DIR")
        kwargs["tasks"] = tasks
    if "pipeline" in accepted and "pipeline" not in kwargs and pipeline is not None:
        kwargs["pipeline"] = pipeline()
    if "executor" in accepted and "executor" not in kwargs and executor is not None:
        kwargs["executor"] = executor()
    # declared on the Reward class; a plain factory function declares nothing, so it gets an
    # estimator only when one is passed in its options
    needs_ppa = isinstance(factory, type) and issubclass(factory, Reward) and factory.needs_ppa
    if needs_ppa and "estimator" in accepted and "estimator" not in kwargs and estimator:
        kwargs["estimator"] = estimator()
    return host.create("reward", name, **kwargs)


class RewardSpec(BaseModel):
    """Everything needed to rebuild a reward in another process.

    ``tasks`` is a task directory (rtlforge suite or RTLLM layout, detected), for rewards that
    score against tasks. ``kwargs`` are the reward's own options. ``pipeline`` holds keyword
    arguments of :meth:`Pipeline.build` (``simulator``, ``synth``, ``timeout``, ``extra``...);
    ``cache`` a SQLite file shared by the worker processes so repeats across them are cheap.
    ``executor`` names an executor plugin and its options (``{"name": "ray", "options":
    {"address": "auto"}}``): the reward's validation and checks go through it (docs/ray.md).
    Tasks, a pipeline, an executor and an estimator are passed only to a reward that takes them
    (:func:`create_reward`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    reward: str = "sequential-hvc"
    tasks: str | None = None
    kwargs: dict[str, Any] = Field(default_factory=dict)
    pipeline: dict[str, Any] = Field(default_factory=lambda: {"timeout": 60.0})
    cache: str | None = None
    estimator: str = "yosys-sta"
    estimator_kwargs: dict[str, Any] = Field(default_factory=dict)
    executor: PluginSpec | None = None
    name: str | None = None  # the logged name; defaults to the reward name

    def check(self, host: PluginHost | None = None) -> None:
        """Check the reward's name and options now, in the process that made the spec."""
        from rtlforge.core.plugins import PluginHost

        host = host if host is not None else PluginHost.default()
        check_reward_options(host, self.reward, self.kwargs)
        if self.executor is not None:
            validate_options(host.options_model("executor", self.executor.name),
                             self.executor.options, what=f"executor {self.executor.name!r}")
        if "tasks" in reward_options(host, self.reward) and self.tasks is None \
                and "tasks" not in self.kwargs:
            raise ConfigError(f"reward {self.reward!r} scores against tasks: give tasks=DIR")

    def build(self, host: PluginHost | None = None) -> Reward:
        """Construct the reward (and, where it takes them, its pipeline and PPA estimator).

        A spec travels to worker processes where no host can follow it, so ``host`` defaults to
        :meth:`PluginHost.default` (the entry points and allow/block lists of that process).
        """
        from rtlforge.core.plugins import PluginHost
        from rtlforge.validate.cache import SQLiteCache
        from rtlforge.validate.pipeline import Pipeline

        host = host if host is not None else PluginHost.default()
        factory = host.get("reward", self.reward)

        def pipeline() -> Pipeline:
            options: dict[str, Any] = dict(self.pipeline)
            if self.cache is not None:
                options["cache"] = SQLiteCache(self.cache)
            return Pipeline.build(host, **options)

        def estimator() -> Any:
            named = PluginSpec(name=self.estimator, options=self.estimator_kwargs)
            if isinstance(factory, type) and issubclass(factory, PPAReward):
                return named  # by name: it can be rebuilt on an executor's workers
            return host.create("ppa_estimator", named.name, **named.options)

        def executor() -> Any:
            assert self.executor is not None
            return host.create("executor", self.executor.name, **self.executor.options)

        return create_reward(host, self.reward, self.kwargs, tasks=self.tasks,
                             pipeline=pipeline, estimator=estimator,
                             executor=executor if self.executor is not None else None)


def _spec(reward: str, tasks: str | Path | None, fields: dict[str, Any]) -> RewardSpec:
    """Spec fields as they are; any other keyword is an option of the reward itself."""
    own = {k: fields.pop(k) for k in list(fields) if k not in RewardSpec.model_fields}
    if own:
        fields["kwargs"] = {**fields.get("kwargs", {}), **own}
    return RewardSpec(reward=reward, tasks=str(tasks) if tasks is not None else None, **fields)


class _LazyReward:
    """Holds a spec; builds the reward on first use in each process; pickles as the spec.

    ``host`` serves the process that made the adapter; it does not travel (a worker process
    builds with its own default host).
    """

    def __init__(self, spec: RewardSpec | None = None, /, *, host: PluginHost | None = None,
                 **fields: Any) -> None:
        self.spec = spec if spec is not None else RewardSpec(**fields)
        self.__name__ = self.spec.name or self.spec.reward
        self._host = host
        self._reward: Reward | None = None
        self._lock = threading.Lock()

    @property
    def reward(self) -> Reward:
        if self._reward is None:
            with self._lock:
                if self._reward is None:
                    self._reward = self.spec.build(self._host)
        return self._reward

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec.model_dump()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(RewardSpec(**state["spec"]))  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


#: Keywords TRL's trainers pass to a reward function that are not dataset columns.
TRAINER_KEYWORDS = frozenset({"trainer_state", "completion_ids", "log_extra", "log_metric",
                              "environments"})
#: Columns a verl sample's ground truth and extra info may carry that are verl's bookkeeping.
_VERL_BOOKKEEPING = frozenset({"index", "split", "data_source"})


class TRLReward(_LazyReward):
    """A TRL ``reward_funcs`` entry: ``(prompts, completions, **columns) -> list[float | None]``.

    Completions may be strings or chat lists (the last assistant message is scored). Every
    dataset column reaches the reward as TRL hands it over (``task_id``, ``history``,
    ``golden_ppa`` for the PPA rewards, ``reference`` for ``ast-similarity``, ``behave_task``,
    a third-party reward's own); only what TRL adds that is not a column
    (:data:`TRAINER_KEYWORDS`) is left out. ``None`` (abstain) is what TRL expects for "no
    reward from this function".
    """

    def __call__(self, prompts: Sequence[Any] | None = None,
                 completions: Sequence[Any] | None = None, **columns: Any) -> list[float | None]:
        completions = list(completions or [])
        texts = [completion_text(c) for c in completions]
        wanted = {k: v for k, v in columns.items() if k not in TRAINER_KEYWORDS}
        return self.reward.score(list(prompts or [""] * len(texts)), texts, **wanted)


def trl_reward(reward: str = "sequential-hvc", *, tasks: str | Path | None = None,
               host: PluginHost | None = None, **fields: Any) -> TRLReward:
    """A TRL reward function for any registered reward, its options checked now.

    ``trl_reward("sequential-hvc", tasks="tasks/", history_weight=0.5)`` or
    ``trl_reward("my-reward", scale=2.0)``: keywords that are :class:`RewardSpec` fields
    (``pipeline``, ``cache``, ``estimator``, ``estimator_kwargs``, ``name``, ``kwargs``) set up
    the spec; every other keyword is an option of the reward. ``host`` checks and builds in
    this process (worker processes use their default host).
    """
    spec = _spec(reward, tasks, fields)
    spec.check(host)
    return TRLReward(spec, host=host)


def _parse(value: Any) -> Any:
    """Datasets often store nested values as JSON text; task ids never start with '{' or '['."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        return load_json(value)
    return value


def verl_columns(ground_truth: Any, extra_info: Mapping[str, Any] | None) -> dict[str, Any]:
    """Map verl's ``ground_truth`` / ``extra_info`` to reward columns for one sample.

    ``ground_truth`` is a task id, or a mapping of columns (``task_id``, ``history``,
    ``golden_ppa``, ``reference``, ``behave_task``, a third-party reward's own). ``extra_info``
    may carry columns too and wins where both give a value: it is the per-rollout channel,
    ground truth the per-prompt one. Every column is passed on (values stored as JSON text are
    parsed, ``task_id`` kept as text); verl's own bookkeeping (``index``, ``split``) is not.
    A reward that needs no task (``ast-similarity``) works without a ``task_id``.
    """
    truth = _parse(ground_truth)
    out: dict[str, Any] = (dict(truth) if isinstance(truth, Mapping)
                           else {} if truth is None else {"task_id": truth})
    out.update((k, v) for k, v in (extra_info or {}).items() if v is not None)
    columns = {k: v if k == "task_id" else _parse(v) for k, v in out.items()
               if k not in _VERL_BOOKKEEPING}
    if columns.get("task_id") is not None:
        columns["task_id"] = str(columns["task_id"])
    return columns


class VerlComputeScore(_LazyReward):
    """verl ``compute_score(data_source, solution_str, ground_truth, extra_info=None)``.

    Called once per sample by verl's naive reward manager (returns ``float | None``), or with
    plural keyword lists by its batch manager (``data_sources``, ``solution_strs``,
    ``ground_truths``, ``extra_infos``; returns a list). Samples of one batch call that share a
    task and history are scored as one group. ``abstain`` replaces ``None`` for managers that
    need a number (verl writes rewards into a tensor).
    """

    def __init__(self, spec: RewardSpec | None = None, /, *, abstain: float | None = None,
                 host: PluginHost | None = None, **fields: Any) -> None:
        super().__init__(spec, host=host, **fields)
        self.abstain = abstain

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "abstain": self.abstain}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(RewardSpec(**state["spec"]), abstain=state.get("abstain"))  # type: ignore[misc]

    def __call__(self, data_source: Any = None, solution_str: Any = None,
                 ground_truth: Any = None, extra_info: Mapping[str, Any] | None = None,
                 **batch: Any) -> float | list[float | None] | None:
        if "solution_strs" in batch:
            solutions = list(batch["solution_strs"])
            truths = list(batch.get("ground_truths") or [None] * len(solutions))
            infos = list(batch.get("extra_infos") or [None] * len(solutions))
            return self._score(solutions, truths, infos)
        return self._score([solution_str], [ground_truth], [extra_info])[0]

    def _score(self, solutions: list[Any], truths: list[Any],
               infos: list[Any]) -> list[float | None]:
        rows = [verl_columns(t, i) for t, i in zip(truths, infos, strict=True)]
        names = dict.fromkeys(key for row in rows for key in row)  # in first-seen order
        columns = {key: [row.get(key) for row in rows] for key in names}
        texts = [completion_text(s) for s in solutions]
        scores = self.reward.score([""] * len(texts), texts, **columns)
        return [self.abstain if s is None else s for s in scores]


def verl_compute_score(reward: str = "sequential-hvc", *, tasks: str | Path | None = None,
                       abstain: float | None = None, host: PluginHost | None = None,
                       **fields: Any) -> VerlComputeScore:
    """A verl ``compute_score`` for any registered reward; keywords as in :func:`trl_reward`."""
    spec = _spec(reward, tasks, fields)
    spec.check(host)
    return VerlComputeScore(spec, abstain=abstain, host=host)
