"""Hook specifications: the only contract between rtlforge and its plugins.

Every hook receives a ``register`` callable. A plugin calls it once per thing it contributes,
with the class (or a zero-argument factory) that implements the matching interface::

    from rtlforge import hookimpl

    @hookimpl
    def register_validators(register):
        register(MyValidator)

Built-in plugins use exactly these hooks and are discovered through the same ``rtlforge``
entry-point group as third-party ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

PROJECT = "rtlforge"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

Register = Callable[[Any], None]


@hookspec
def register_validators(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.Validator` classes."""


@hookspec
def register_generators(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.Generator` classes."""


@hookspec
def register_ppa_estimators(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.PPAEstimator` classes."""


@hookspec
def register_rewards(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.Reward` classes."""


@hookspec
def register_archives(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.Archive` classes."""


@hookspec
def register_trainers(register: Register) -> None:
    """Register :class:`~rtlforge.core.interfaces.Trainer` classes."""


@hookspec
def register_commands(cli: Any) -> None:
    """Add click commands to the ``rtlforge`` CLI group."""


#: hook name -> plugin kind (see ``rtlforge.core.interfaces.PLUGIN_KINDS``)
REGISTER_HOOKS: dict[str, str] = {
    "register_validators": "validator",
    "register_generators": "generator",
    "register_ppa_estimators": "ppa_estimator",
    "register_rewards": "reward",
    "register_archives": "archive",
    "register_trainers": "trainer",
}
