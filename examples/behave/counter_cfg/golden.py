"""TRUSTED golden for the bundled example counter_cfg (Python reference written by us; replaced
by a behaviour-DSL model when rtlforge.behave.model lands). Per-cycle: process returns the
outputs seen in the cycle, then commits the clock edge."""


class Golden:
    def reset(self) -> None:
        self.count = 0

    def process(self, inputs):
        hit = self.count == inputs["limit"]
        out = {"count": self.count, "wrap": bool(inputs["en"] and hit)}
        if inputs["en"]:
            self.count = 0 if hit else (self.count + 1) % 16
        return out
