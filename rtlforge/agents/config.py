"""The agents file (``rtlforge refine --agents FILE``): per-role overrides, as TOML.

TOML because the rest of rtlforge's configuration is (task.toml, role templates)::

    # which roles the loop may use (optional; all registered roles when left out)
    enabled = ["genius", "fast", "debug", "optimize", "waveform", "testbench"]

    [roles.genius]
    generator = "openai"                      # any generator plugin
    generator_options = { model = "big-model" }
    temperature = 0.7
    retrieval_k = 15

    [roles.debug]
    template = "prompts/debug.toml"           # relative to this file; or a bundled name
    focus = "error"

A role table takes exactly the fields of :class:`~rtlforge.agents.base.RoleSettings`
(``template``, ``generator``, ``generator_options``, ``temperature``, ``top_p``,
``max_tokens``, ``retrieval_k``, ``focus``); a key it leaves out keeps the role's default.
Unknown role names, unknown keys and out-of-range values are a :class:`AgentsFileError`
naming the file and, for a misspelling, the closest valid name.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rtlforge.agents.base import RoleSettings
from rtlforge.core.errors import ConfigError
from rtlforge.core.untrusted import load_toml

__all__ = ["AgentsConfig", "AgentsFileError", "builtin_role_names", "load_agents_file",
           "parse_agents_config", "role_overrides"]

_TOP_KEYS = ("enabled", "roles")


class AgentsFileError(ConfigError, ValueError):
    """An agents file that does not parse, names an unknown role or key, or a bad value."""


class AgentsConfig(BaseModel):
    """A parsed agents file: the roles it enables (None: all) and each role's overrides
    (only the keys the file sets, already checked against :class:`RoleSettings`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: tuple[str, ...] | None = None
    roles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    source: str | None = None  # the file it came from, for messages

    def is_enabled(self, role: str) -> bool:
        return self.enabled is None or role in self.enabled


def builtin_role_names() -> tuple[str, ...]:
    from rtlforge.agents.roles import BUILTIN_ROLES

    return tuple(role.name for role in BUILTIN_ROLES)


def _guess(name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _template_path(value: Any, base: Path | None) -> Any:
    """A relative ``.toml`` template path, relative to the agents file's folder."""
    if isinstance(value, str) and value.endswith(".toml") and base is not None:
        path = Path(value)
        if not path.is_absolute():
            return str(base / path)
    return value


def parse_agents_config(raw: Mapping[str, Any], *, roles: Collection[str] | None = None,
                        origin: str = "<agents file>", base: Path | None = None) -> AgentsConfig:
    """Check a parsed agents file against the known ``roles`` (default: the built-in ones)."""
    known = tuple(roles) if roles is not None else builtin_role_names()
    for key in raw:
        if key not in _TOP_KEYS:
            raise AgentsFileError(f"{origin}: unknown key {key!r} (allowed: "
                                  f"{', '.join(_TOP_KEYS)}){_guess(key, _TOP_KEYS)}")
    enabled = raw.get("enabled")
    if enabled is not None:
        if not isinstance(enabled, list) or not all(isinstance(n, str) for n in enabled):
            raise AgentsFileError(f"{origin}: 'enabled' is a list of role names")
        for name in enabled:
            if name not in known:
                raise AgentsFileError(f"{origin}: enabled: unknown role {name!r} (known: "
                                      f"{', '.join(known)}){_guess(name, known)}")
    tables = raw.get("roles", {})
    if not isinstance(tables, Mapping):
        raise AgentsFileError(f"{origin}: 'roles' holds one [roles.NAME] table per role")
    fields = tuple(RoleSettings.model_fields)
    overrides: dict[str, dict[str, Any]] = {}
    for name, table in tables.items():
        where = f"{origin}: [roles.{name}]"
        if name not in known:
            raise AgentsFileError(f"{where}: unknown role {name!r} (known: "
                                  f"{', '.join(known)}){_guess(name, known)}")
        if not isinstance(table, Mapping):
            raise AgentsFileError(f"{where}: expected a table of settings")
        for key in table:
            if key not in fields:
                raise AgentsFileError(f"{where}: unknown key {key!r} (allowed: "
                                      f"{', '.join(fields)}){_guess(key, fields)}")
        values = {k: _template_path(v, base) if k == "template" else v for k, v in table.items()}
        try:
            checked = RoleSettings.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                 for e in exc.errors())
            raise AgentsFileError(f"{where}: {problems}") from exc
        overrides[name] = checked.model_dump(mode="json", include=set(values))
    return AgentsConfig(enabled=tuple(enabled) if enabled is not None else None,
                        roles=overrides, source=origin)


def load_agents_file(path: str | Path, *, roles: Collection[str] | None = None) -> AgentsConfig:
    """Read and check an agents file (TOML). ``roles``: the role names that exist (for a host
    with third-party roles, ``host.names("agent_role")``); default: the built-in ones."""
    file = Path(path)
    try:
        raw = load_toml(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AgentsFileError(f"agents file {file}: {exc}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise AgentsFileError(f"agents file {file}: not valid TOML: {exc}") from exc
    return parse_agents_config(raw, roles=roles, origin=str(file), base=file.parent)


def role_overrides(config: AgentsConfig) -> dict[str, dict[str, Any]]:
    """Role name -> RoleSettings overrides, the ``roles=`` mapping the Orchestrator takes.

    Only the keys the file set, so each role keeps its own defaults for the rest; ``focus``
    as its string value, like every other value (JSON-safe).
    """
    return {name: dict(values) for name, values in config.roles.items()}
