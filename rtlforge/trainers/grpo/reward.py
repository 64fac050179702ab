"""The reward TRL calls during GRPO (:class:`RolloutReward`): the reward library's TRL adapter
plus what training needs to see, the per-sample details the next generation's dataset is built
from and the per-group statistics logged each step.

``None`` (an abstaining reward) is handed to TRL unchanged, never turned into 0 here (see
:mod:`rtlforge.trainers.grpo`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rtlforge.rewards.adapters import TRAINER_KEYWORDS, RewardSpec, TRLReward
from rtlforge.rewards.base import RewardDetail
from rtlforge.rewards.columns import completion_text
from rtlforge.trainers.datasets import Rollout, history_key
from rtlforge.trainers.grpo.config import ChoiceSpec

__all__ = ["RolloutReward", "group_stats"]


def group_stats(rewards: Sequence[float | None], codes: Sequence[str | None],
                group_size: int) -> dict[str, float]:
    """Per-call statistics of a batch laid out as consecutive groups of ``group_size``.

    A group has no signal when fewer than two of its members were scored or all scored members
    got the same reward: its advantages are all zero. ``None`` rewards are left out, never 0.
    """
    n_groups = max(1, len(rewards) // group_size)
    zero, unique = 0, []
    for g in range(n_groups):
        part = [r for r in rewards[g * group_size:(g + 1) * group_size] if r is not None]
        if len(part) < 2 or max(part) - min(part) <= 1e-12:
            zero += 1
        unique.append(len({c for c in codes[g * group_size:(g + 1) * group_size] if c}))
    return {"zero_signal_groups": float(zero), "groups": float(n_groups),
            "unique_circuits": float(np.mean(unique)) if unique else 0.0,
            "abstained": float(sum(r is None for r in rewards))}


class RolloutReward(TRLReward):
    """The TRL adapter plus what training needs to see: per-sample details and group stats.

    It scores with the reward's ``score_detailed`` (so verdicts, PPA and HVC are kept for the
    next generation's dataset), passes group statistics to TRL's ``log_metric`` (they land in
    the same per-step log as TRL's own metrics), and keeps :class:`Rollout` records in
    ``rollouts`` (per process; the trainer drains them after each generation). Pickles as its
    spec, like the adapter.
    """

    def __init__(self, spec: RewardSpec | None = None, /, *, group_size: int = 1,
                 choice: ChoiceSpec | None = None, **fields: Any) -> None:
        super().__init__(spec, **fields)
        self.group_size = group_size
        self.choice = choice
        self._choice_texts = choice.texts() if choice is not None else None
        self.rollouts: list[Rollout] = []
        self.last_stats: dict[str, float] = {}
        self.seconds = 0.0
        self.scored = 0

    def __getstate__(self) -> dict[str, Any]:
        choice = self.choice.model_dump() if self.choice is not None else None
        return {**super().__getstate__(), "group_size": self.group_size, "choice": choice}

    def __setstate__(self, state: dict[str, Any]) -> None:
        choice = ChoiceSpec(**state["choice"]) if state.get("choice") else None
        self.__init__(RewardSpec(**state["spec"]), group_size=state["group_size"],  # type: ignore[misc]
                      choice=choice)

    def map_completion(self, text: str) -> str:
        """The text the reward sees: the chosen variant in choice mode, else ``text``."""
        if self._choice_texts is None:
            return text
        label = text.strip()[:1]
        return self._choice_texts.get(label, "")

    def __call__(self, prompts: Sequence[Any] | None = None,
                 completions: Sequence[Any] | None = None, **columns: Any) -> list[float | None]:
        from rtlforge.core.errors import ExtractionError
        from rtlforge.core.extract import extract_verilog
        from rtlforge.core.models import Verdict
        from rtlforge.trainers.datasets import group_hvc

        start = time.perf_counter()
        texts = [self.map_completion(completion_text(c)) for c in completions or []]
        n = len(texts)
        # every dataset column, as the TRL adapter passes them (a reward may need its own)
        wanted = {k: v for k, v in columns.items() if k not in TRAINER_KEYWORDS}
        # Verdicts, PPA and HVC come from the testbench rewards' detail; any other reward's
        # detail carries its number only.
        scored = self.reward.score_detailed(list(prompts or [""] * n), texts, **wanted)
        details = [d if isinstance(d, RewardDetail) else None for d in scored]
        scores = [d.reward for d in scored]
        codes: list[str | None] = []
        for t, d in zip(texts, details, strict=True):
            if d is not None:  # the testbench rewards say what they extracted and judged
                codes.append(d.source)
                continue
            try:  # another reward's detail carries no code: extract it here, once
                codes.append(extract_verilog(t))
            except ExtractionError:
                codes.append(None)
        histories = list(wanted.get("history") or [None] * n)
        task_ids = [str(t) for t in wanted.get("task_id") or [""] * n]
        rewards: list[float | None] = []
        passed = hvcs = 0.0
        n_hvc = n_scored = 0
        for i in range(n):
            d = details[i]
            r = scores[i]
            rewards.append(None if r is None or not math.isfinite(r) else float(r))
            ok = d is not None and d.verdict is Verdict.PASS
            hvc = d.hvc if d is not None else None
            if hvc is None and d is not None and d.objectives is not None:
                hvc = group_hvc(histories[i], d.objectives)  # baselines: HVC for the log only
            self.rollouts.append(Rollout(
                task_id=task_ids[i], history=history_key(histories[i]), code=codes[i],
                reward=rewards[i], passed=ok, ppa=d.ppa if d is not None else None,
                objectives=d.objectives if d is not None else None, hvc=hvc))
            if rewards[i] is not None:
                n_scored += 1
                passed += ok
                if hvc is not None:
                    hvcs += hvc
                    n_hvc += 1
        stats = group_stats(rewards, codes, self.group_size)
        stats["pass_rate"] = passed / n_scored if n_scored else math.nan
        stats["hvc_mean"] = hvcs / n_hvc if n_hvc else math.nan
        if self._choice_texts is not None:
            stats.update(self._choice_oracle(list(prompts or [""] * n), wanted, task_ids,
                                             histories, rewards))
        self.last_stats = stats
        self.seconds += time.perf_counter() - start
        self.scored += n
        log_metric = columns.get("log_metric")
        if callable(log_metric):
            for key, value in stats.items():
                if math.isfinite(value):
                    log_metric(f"rtlforge/{key}", value)
        return rewards

    def _choice_oracle(self, prompts: Sequence[Any], wanted: Mapping[str, Any],
                       task_ids: Sequence[str], histories: Sequence[Any],
                       rewards: Sequence[float | None]) -> dict[str, float]:
        """How close the choices came to the best label for each prompt's history.

        The attainable reward falls as histories grow (a circuit already in the history adds
        no hypervolume), so the raw reward mean can drop while the policy improves. In choice
        mode every label is known, so each (task, history) is scored once with every label;
        ``choice_optimal_rate`` is the share of samples that got that best reward and
        ``choice_regret`` the mean shortfall. Cached validation and PPA make this cheap.
        """
        texts = list(dict.fromkeys(self._choice_texts.values())) if self._choice_texts else []
        keys = [(t, history_key(h)) for t, h in zip(task_ids, histories, strict=True)]
        best: dict[tuple[str, str], float | None] = {}
        for i, key in enumerate(keys):
            if key in best or not texts:
                continue
            columns = {k: [v[i]] * len(texts) for k, v in wanted.items()}
            scores = self.reward.score([prompts[i]] * len(texts), texts, **columns)
            finite = [s for s in scores if s is not None and math.isfinite(s)]
            best[key] = max(finite) if finite else None
        optimal = regret = 0.0
        counted = 0
        for key, r in zip(keys, rewards, strict=True):
            top = best.get(key)
            if top is None or r is None:
                continue
            counted += 1
            optimal += r >= top - 1e-9
            regret += max(0.0, top - r)
        if not counted:
            return {}
        return {"choice_optimal_rate": optimal / counted, "choice_regret": regret / counted}
