"""A package that opens its own extension point: the ``lint_rule`` plugin kind.

``register_hookspecs`` adds the hook specification, ``register_plugin_kinds`` declares the kind
(name, interface, collecting hook); other packages then implement ``register_lint_rules`` and
the host hands their rules out like any built-in kind. The declaring package consumes the kind
through the host it is given (``run_lint_rules``).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from rtlforge import hookimpl
from rtlforge.core.hookspecs import PluginKind, Register, hookspec
from rtlforge.core.interfaces import Plugin
from rtlforge.core.plugins import PluginHost


class LintRule(Plugin):
    """One text rule for Verilog sources: a list of findings, empty when the text is clean."""

    @abstractmethod
    def check(self, text: str) -> list[str]:
        ...


class LintRuleSpecs:
    """The hook specifications this package adds (a class or a module holding them)."""

    @hookspec
    def register_lint_rules(self, register: Register) -> None:
        """Register :class:`LintRule` classes (kind ``lint_rule``)."""


LINT_RULE_KIND = PluginKind("lint_rule", LintRule, "register_lint_rules",
                            "a text rule for Verilog sources")


@hookimpl
def register_hookspecs(register: Register) -> None:
    register(LintRuleSpecs)


@hookimpl
def register_plugin_kinds(register: Register) -> None:
    register(LINT_RULE_KIND)


def run_lint_rules(host: PluginHost, text: str) -> dict[str, list[str]]:
    """Every registered rule's findings for ``text``, by rule name."""
    return {name: host.create("lint_rule", name).check(text)
            for name in host.names("lint_rule")}


# ---------------------------------------------------------------- another package's rule


class NoTabs(LintRule):
    """Tabs render differently in every editor; indent with spaces."""

    name: ClassVar[str] = "no-tabs"

    def check(self, text: str) -> list[str]:
        return [f"line {n}: tab character" for n, line in enumerate(text.splitlines(), 1)
                if "\t" in line]


class NoTabsPlugin:
    """What a second package would ship (its own entry point) to add a rule."""

    @hookimpl
    def register_lint_rules(self, register: Register) -> None:
        register(NoTabs)
