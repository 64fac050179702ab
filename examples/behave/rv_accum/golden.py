"""TRUSTED golden for the bundled example rv_accum (Python reference written by us; replaced by
a behaviour-DSL model when rtlforge.behave.model lands)."""


class Golden:
    def reset(self) -> None:
        self.total = 0
        self.seen = 0

    def process(self, inputs):
        self.total += inputs["in_data"]
        self.seen += 1
        if self.seen < 4:
            return {}
        out = {"out_sum": self.total}
        self.total = 0
        self.seen = 0
        return out
