"""TRUSTED golden for the bundled example add8 (a Python reference written by us; replaced by a
behaviour-DSL model when rtlforge.behave.model lands)."""


class Golden:
    def reset(self) -> None:
        pass

    def process(self, inputs):
        return {"sum": inputs["a"] + inputs["b"]}
