"""The update's arithmetic: group-relative advantages and the masked policy-gradient loss.

Advantages are GRPO's (Shao et al. 2024, DeepSeekMath §4.1.2, outcome supervision): every
rollout of a group gets ``(r - mean(r)) / (std(r) + eps)`` of its group's rewards, the same for
all its tokens. ``std`` is the population standard deviation (the self-improve trainer's
choice; TRL uses the sample one), ``eps`` 1e-4 as in TRL, so an all-equal group has zero
advantages instead of a division by zero.

The loss is GRPO's clipped surrogate at one policy iteration per batch, where the ratio
``exp(lp - lp_old)`` is 1 and only its gradient remains: ``-A · exp(lp - sg(lp))`` per model
token, plus ``beta`` times the k3 estimate of KL to the reference policy
(``exp(ref - lp) - (ref - lp) - 1``, as in the GRPO paper and TRL). Only tokens with mask 1
(the model's own) enter; the sums are normalised per rollout by the trainer. torch is imported
inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["group_advantages", "masked_policy_loss", "token_logprobs"]


def group_advantages(rewards: Sequence[float], eps: float = 1e-4) -> list[float]:
    """``(r - mean) / (population std + eps)`` for each reward of one group."""
    if not rewards:
        return []
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    return [(r - mean) / (std + eps) for r in rewards]


def token_logprobs(logits: Any, targets: Any, allowed: Any = None,
                   temperature: float = 1.0) -> Any:
    """log π(target) per position under the distribution sampling used: logits divided by
    the temperature (as TRL does) and, with ``allowed`` (token ids), renormalised over those."""
    import torch

    logits = logits.float() / temperature
    if allowed is not None:
        blocked = torch.full_like(logits, float("-inf"))
        blocked[..., allowed] = 0.0
        logits = logits + blocked
    return torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def masked_policy_loss(logprobs: Any, mask: Any, advantage: float, *,
                       ref_logprobs: Any = None, beta: float = 0.0) -> tuple[Any, Any]:
    """Summed loss and summed KL over the positions where ``mask`` is 1 (not normalised)."""
    import torch

    keep = mask.bool()
    # context positions may hold tokens outside an allowed set (log-prob -inf): zero them
    # before any arithmetic, so no inf - inf reaches the backward pass
    logprobs = torch.where(keep, logprobs, torch.zeros_like(logprobs))
    ratio = torch.exp(logprobs - logprobs.detach())
    loss = -advantage * ratio
    kl = torch.zeros_like(logprobs)
    if ref_logprobs is not None:
        ref = torch.where(keep, ref_logprobs.detach(), torch.zeros_like(logprobs))
        delta = ref - logprobs
        kl = torch.exp(delta) - delta - 1.0
        if beta:
            loss = loss + beta * kl
    zero = torch.zeros_like(loss)
    return torch.where(keep, loss, zero).sum(), torch.where(keep, kl.detach(), zero).sum()
