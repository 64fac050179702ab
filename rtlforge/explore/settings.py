"""Which settings define an explore run's results, and whether a run directory may be reused.

A run directory holds results that only mean something under the settings that produced them.
Resuming with other settings would print old results under new labels, so a run directory is
reused only when its stored settings match; ``extend`` additionally allows more iterations
and/or more trials (everything else equal), and anything else is refused with each difference
named.

Result-defining (compared): every method's generator (name and options; secret-looking values
by digest), template (name and content), history policy and limit, sampling parameters,
``select`` labels and request metadata; the task ids and each task's content (spec, top,
testbench, support files, pass rule, golden); iterations; trials; the PPA estimator and its
configuration (liberty...); the validation pipeline (validators and their options, timeout);
the AST scorer; the HV backend; the preset.

Harmless (not compared: they change neither a stored record nor what the next prompt shows):
workers, batch size, max in-flight groups, progress callbacks, checkpoints, baselines and the
report title (the report is rewritten from the records with the current values each run).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import string
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rtlforge.generation.prompts import PromptTemplate

__all__ = ["SETTINGS_VERSION", "RunSettingsMismatch", "differences", "flatten", "redact",
           "template_digest", "template_fields"]

SETTINGS_VERSION = 1
_SECRET_WORDS = ("key", "token", "secret", "password")
_MAX_LISTED = 12


class RunSettingsMismatch(ValueError):
    """The run directory holds results made under other settings (a usage error: exit 2)."""

    def __init__(self, run_dir: str, diffs: list[tuple[str, Any, Any]], hint: str) -> None:
        self.run_dir, self.diffs = run_dir, diffs
        lines = [f"  {key}: {_show(old)} (stored) vs {_show(new)} (now)"
                 for key, old, new in diffs[:_MAX_LISTED]]
        if len(diffs) > _MAX_LISTED:
            lines.append(f"  ... and {len(diffs) - _MAX_LISTED} more")
        super().__init__(f"run directory {run_dir} was made with other settings:\n"
                         + "\n".join(lines) + f"\n{hint}")


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


_ABSENT: Any = _Absent()


def template_digest(template: PromptTemplate) -> str:
    """A template's content (a user's edited ``mine.toml`` keeps its name, not its digest)."""
    blob = json.dumps(dataclasses.asdict(template), sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def template_fields(template: PromptTemplate) -> set[str]:
    """The prompt fields (``{iterations}``...) the system and user prompts show."""
    return {f for part in (template.user, template.system or "")
            for _, f, _, _ in string.Formatter().parse(part) if f}


def redact(options: Mapping[str, Any]) -> dict[str, Any]:
    """Options as stored in the run: values of secret-looking names become a digest, so a
    changed key is still noticed but never written to disk."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if any(word in name.lower() for word in _SECRET_WORDS):
            blob = json.dumps(value, sort_keys=True, default=str).encode()
            out[name] = "sha256:" + hashlib.sha256(blob).hexdigest()[:16]
        else:
            out[name] = value
    return out


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as ``a.b.c`` keys (lists and scalars are leaves)."""
    if isinstance(tree, Mapping) and tree:
        out: dict[str, Any] = {}
        for key, value in tree.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: tree}


def differences(stored: Mapping[str, Any] | None, current: Mapping[str, Any]
                ) -> list[tuple[str, Any, Any]]:
    """``(key, stored, current)`` for every leaf that differs; absent leaves are ``(absent)``."""
    if stored is None:
        return [("settings", "not recorded (a run of an older rtlforge)", "recorded")]
    old, new = flatten(stored), flatten(current)
    # JSON round trip: the stored side went through the archive (tuples are lists there)
    new = {k: json.loads(json.dumps(v, default=str)) for k, v in new.items()}
    pairs = ((key, old.get(key, _ABSENT), new.get(key, _ABSENT))
             for key in sorted(set(old) | set(new)))
    return [(key, a, b) for key, a, b in pairs if a != b]
