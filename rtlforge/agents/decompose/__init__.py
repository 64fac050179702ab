"""Hierarchical decomposition of multi-component specs (issue 12, section 4).

:func:`is_complex` decides, :class:`Decomposer` plans, builds and checks; see
``docs/decomposition.md``.
"""

from rtlforge.agents.decompose.complexity import (
    COMPLEXITY_THRESHOLD,
    COMPONENT_KEYWORDS,
    component_keywords,
    is_complex,
)
from rtlforge.agents.decompose.decomposer import (
    CallLLM,
    Decomposer,
    DecompositionResult,
    ModuleBuild,
    assemble,
    synchronise,
)
from rtlforge.agents.decompose.plan import (
    DecompositionError,
    DecompositionPlan,
    PlannedPort,
    SubModule,
    build_order,
    parse_plan,
)

__all__ = [
    "COMPLEXITY_THRESHOLD",
    "COMPONENT_KEYWORDS",
    "CallLLM",
    "Decomposer",
    "DecompositionError",
    "DecompositionPlan",
    "DecompositionResult",
    "ModuleBuild",
    "PlannedPort",
    "SubModule",
    "assemble",
    "build_order",
    "component_keywords",
    "is_complex",
    "parse_plan",
    "synchronise",
]
