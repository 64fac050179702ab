"""The agents file: typed overrides per role, clear errors with a "did you mean", the shape the
Orchestrator takes, and the shipped example."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.agents.base import RoleSettings
from rtlforge.agents.config import (
    AgentsFileError,
    load_agents_file,
    parse_agents_config,
    role_overrides,
)
from rtlforge.agents.roles import BUILTIN_ROLES, DebugRole
from rtlforge.core.errors import ConfigError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agents" / "agents.toml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_overrides_keep_only_the_keys_set_and_apply_to_the_role(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    template = tmp_path / "prompts" / "mine.toml"
    template.write_text('name = "mine"\nuser = "Write {top}: {spec}"\n', encoding="utf-8")
    path = write(tmp_path, """
enabled = ["debug", "fast"]
[roles.debug]
template = "prompts/mine.toml"
temperature = 0.1
focus = "minimal"
generator = "replay"
generator_options = { path = "answers.jsonl" }
""")
    config = load_agents_file(path)
    assert config.enabled == ("debug", "fast")
    assert config.is_enabled("fast") and not config.is_enabled("genius")
    overrides = role_overrides(config)
    assert overrides == {"debug": {
        "template": str(template), "temperature": 0.1, "focus": "minimal",
        "generator": "replay", "generator_options": {"path": "answers.jsonl"}}}
    role = DebugRole(**overrides["debug"])
    assert role.settings.retrieval_k == 5  # not in the file: the role's default stays
    assert role.settings.temperature == 0.1 and role.template.name == "mine"


def test_no_enabled_list_means_every_role(tmp_path: Path) -> None:
    config = load_agents_file(write(tmp_path, "[roles.fast]\nmax_tokens = 512\n"))
    assert config.enabled is None and all(config.is_enabled(r.name) for r in BUILTIN_ROLES)
    assert role_overrides(config) == {"fast": {"max_tokens": 512}}


@pytest.mark.parametrize(("text", "message"), [
    ("[roles.debgu]\ntemperature = 0.1\n", "unknown role 'debgu'"),
    ("[roles.debug]\ntemprature = 0.1\n", "did you mean 'temperature'?"),
    ('enabled = ["genuis"]\n', "did you mean 'genius'?"),
    ("[role.debug]\n", "did you mean 'roles'?"),
    ("[roles.debug]\ntemperature = 3.0\n", "temperature"),
    ('[roles.debug]\nfocus = "everything"\n', "focus"),
    ("[roles.debug]\nretrieval_k = -1\n", "retrieval_k"),
    ("enabled = 'debug'\n", "a list of role names"),
    ("[roles]\ndebug = 3\n", "expected a table"),
    ("[roles.debug\n", "not valid TOML"),
])
def test_mistakes_are_config_errors_naming_the_problem(tmp_path: Path, text: str,
                                                       message: str) -> None:
    with pytest.raises(AgentsFileError) as caught:
        load_agents_file(write(tmp_path, text))
    assert message in str(caught.value) and str(tmp_path) in str(caught.value)
    assert isinstance(caught.value, ConfigError)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(AgentsFileError, match="agents file"):
        load_agents_file(tmp_path / "absent.toml")


def test_third_party_role_names_can_be_allowed() -> None:
    raw = {"roles": {"verifier": {"temperature": 0.0}}}
    with pytest.raises(AgentsFileError, match="unknown role 'verifier'"):
        parse_agents_config(raw)
    config = parse_agents_config(raw, roles=["verifier", "fast"])
    assert role_overrides(config) == {"verifier": {"temperature": 0.0}}


def test_a_role_table_takes_exactly_the_role_settings_fields() -> None:
    every = {"template": "fast", "generator": "openai", "generator_options": {},
             "temperature": 0.5, "top_p": 0.9, "max_tokens": 100, "retrieval_k": 3,
             "focus": "full"}
    assert set(every) == set(RoleSettings.model_fields)
    config = parse_agents_config({"roles": {"fast": every}})
    assert role_overrides(config)["fast"] == every


def test_the_shipped_example_loads_and_builds_every_role_it_names() -> None:
    config = load_agents_file(EXAMPLE)
    overrides = role_overrides(config)
    assert config.enabled == tuple(r.name for r in BUILTIN_ROLES)
    assert overrides["genius"]["generator"] == "openai"
    by_name = {r.name: r for r in BUILTIN_ROLES}
    for name, values in overrides.items():
        assert by_name[name](**values).settings.model_dump(include=set(values),
                                                           mode="json") == values
