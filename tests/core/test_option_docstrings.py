"""Option descriptions read from Google-style docstrings (the convention of core/options.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rtlforge.core.options import describe_options, docstring_options, options_model


def test_args_entries_with_types_and_continuations() -> None:
    doc = """Summary line.

    Args:
        path: the file to read.
        timeout (float): seconds to wait,
            continued on a second line.
        **options: passed on.

    Returns:
        nothing: not an option.
    """
    assert docstring_options(doc) == {
        "path": "the file to read.",
        "timeout": "seconds to wait, continued on a second line.",
        "options": "passed on.",
    }


def test_text_outside_an_args_section_is_not_read() -> None:
    assert docstring_options("path: looks like an entry but is prose.") == {}
    assert docstring_options(None) == {}


def test_init_args_describe_derived_options_and_subclasses_inherit_them() -> None:
    class Base:
        def __init__(self, *, scale: float = 1.0, bare: int = 0) -> None:
            """Args:
                scale: multiplies the score.
            """

    class Child(Base):
        def __init__(self, *, extra: str = "x", **options: object) -> None:
            """Args:
                extra: a child's own option.
            """
            super().__init__(**options)  # type: ignore[arg-type]

    described = {o.name: o.description for o in describe_options(options_model(Child))}
    assert described == {"extra": "a child's own option.", "scale": "multiplies the score.",
                         "bare": ""}


def test_dataclass_metadata_wins_over_the_attributes_section() -> None:
    @dataclass
    class Check:
        """A check.

        Attributes:
            strict: from the docstring.
            limit: from the docstring too.
        """

        strict: bool = False
        limit: int = field(default=3, metadata={"description": "from the metadata"})

    described = {o.name: o.description for o in describe_options(options_model(Check))}
    assert described == {"strict": "from the docstring.", "limit": "from the metadata"}
