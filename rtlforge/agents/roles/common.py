"""What every built-in role shares: section headings that appear only when a section has text.

A template is data and cannot say "print this heading only if the field is non-empty", and a
heading over nothing ("Previous attempt:" on the first iteration) misleads a model. So the
built-in roles hand the template framed values: ``code`` arrives as a heading plus a fenced
block, ``feedback`` with a heading, and so on, or as "" when there is nothing to say (the
template's blank-line collapsing then removes the gap). The action's lint, timing and area flags
become extra sentences of ``focus``.
"""

from __future__ import annotations

from typing import ClassVar

from rtlforge.agents.base import AgentContext, AgentRole

__all__ = ["BuiltinRole", "frame"]

_FLAG_TEXT = (
    ("lint_focus", "Make it lint-clean: declare every net, match widths exactly, no latches."),
    ("timing_focus", "Keep the critical path short: avoid long chains of logic between flops."),
    ("area_focus", "Keep the area small: share logic, avoid needless registers and wide "
                   "operators."),
)


#: The heading above an attempt's validation feedback (scripts and tests look for it).
FEEDBACK_HEADING = "What validation reported about it:"


def frame(heading: str, body: str, *, fence: str | None = None) -> str:
    """``heading`` then ``body`` (in a ```fence block when given), or "" for an empty body."""
    body = body.strip("\n").rstrip()  # keep the first line's indent: tables stay aligned
    if not body.strip():
        return ""
    if fence is not None:
        body = f"```{fence}\n{body}\n```"
    return f"{heading}\n{body}"


class BuiltinRole(AgentRole):
    """An :class:`AgentRole` whose template fields carry their own headings (see the module)."""

    name: ClassVar[str] = "abstract-builtin"

    def fields(self, ctx: AgentContext) -> dict[str, object]:
        values = super().fields(ctx)
        flags = [text for flag, text in _FLAG_TEXT if getattr(ctx.action, flag)]
        values["focus"] = " ".join([str(values["focus"]), *flags])
        values["ports"] = frame("Ports (use exactly these names, directions and widths):",
                                str(values["ports"]))
        values["knowledge"] = frame("Reference material that may help (adapt, do not copy "
                                    "blindly):", str(values["knowledge"]))
        values["submodules"] = frame("Sub-modules that already exist (instantiate them, do not "
                                     "redefine them):", str(values["submodules"]), fence="verilog")
        values["code"] = frame(f"Your previous attempt (iteration {ctx.iteration}):",
                               str(values["code"]), fence="verilog")
        values["feedback"] = frame(FEEDBACK_HEADING, str(values["feedback"]))
        values["waveform"] = frame("Signals around the first mismatch (from the simulation "
                                   "dump; rows marked * disagree with the reference):",
                                   str(values["waveform"]))
        return values
