"""A generator plugin: answer every prompt with a fixed module (a stand-in for a model).

A real generator sends ``request.system`` and ``request.prompt`` to a model and returns
``params.n`` samples per request; how they are turned into designs (Verilog extraction,
validation) is not its business.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rtlforge import hookimpl
from rtlforge.core.hookspecs import Register
from rtlforge.core.interfaces import Generation, GenerationRequest, Generator, SamplingParams


class CannedGenerator(Generator):
    """Returns the same answer ``n`` times for every request."""

    name: ClassVar[str] = "canned"

    def __init__(self, *, text: str = "```verilog\nmodule top;\nendmodule\n```") -> None:
        """Args:
            text: the completion returned for every request.
        """
        self.text = text

    def generate(self, requests: Sequence[GenerationRequest],
                 params: SamplingParams) -> list[list[Generation]]:
        return [[Generation(text=self.text, generator=self.name, finish_reason="stop")
                 for _ in range(params.n)] for _ in requests]


@hookimpl
def register_generators(register: Register) -> None:
    register(CannedGenerator)
