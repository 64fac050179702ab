# model: edge_detect (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Edges(Record):
    rise: Bool
    down: Bool


class EdgeDetect(Model):
    """Per cycle: rise / down show, one clock after it, an edge of `a` seen at the previous
    clock edge (a registered copy of `a`, cleared by reset, is the reference)."""

    prev: Bool
    rise: Bool
    down: Bool

    def reset(self):
        self.prev = False
        self.rise = False
        self.down = False

    def process(self, a: Bool) -> Edges:
        rise = self.rise
        down = self.down
        self.rise = a and not self.prev
        self.down = self.prev and not a
        self.prev = a
        return Edges(rise=rise, down=down)
