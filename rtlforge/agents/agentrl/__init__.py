"""Multi-turn RL for the BEHAVE tool-using agent (``trainer: behave-agent``;
docs/behave-agent-rl.md).

:mod:`.rollout` (segments, turns, rollouts, packing into masked sequences), :mod:`.context`
(the window and which turns are evicted), :mod:`.objective` (group-relative advantages and
the masked loss), :mod:`.outcome` (an episode's reward, tool-call parsing), :mod:`.envs` (the
BEHAVE environment and the toy one behind one protocol), :mod:`.trainer` (the loop).

Why under ``agents``: the trainer needs the trainers' model, checkpoint and metrics helpers
and BEHAVE's environment, rewards and pool schedule; ``trainers`` and ``behave`` sit side by
side in one layer and may not import each other, ``agents`` may import both.
"""
