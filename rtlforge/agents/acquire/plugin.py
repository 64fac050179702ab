"""Registers the four acquisition roles through ``register_agent_roles`` and the BEHAVE RL
trainers (``self-improve``, ``behave-agent``) through ``register_trainers``, as a third-party
package would (its own entry point, ``acquire_roles``). The ``agent_role`` kind itself is
declared by the agents plugin; this module only contributes to it."""

from __future__ import annotations

from rtlforge.core.hookspecs import Register, hookimpl


@hookimpl
def register_agent_roles(register: Register) -> None:
    from rtlforge.agents.acquire.roles import ACQUISITION_ROLES

    for role in ACQUISITION_ROLES:
        register(role)


@hookimpl
def register_trainers(register: Register) -> None:
    from rtlforge.agents.acquire.selfimprove import SelfImproveTrainer
    from rtlforge.agents.agentrl.trainer import BehaveAgentTrainer

    register(SelfImproveTrainer)
    register(BehaveAgentTrainer)
