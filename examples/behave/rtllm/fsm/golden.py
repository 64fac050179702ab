# model: fsm (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Match(Record):
    MATCH: Bool


class Fsm(Model):
    """Mealy detector of 1,0,0,1,1 on IN, overlapping ("loop detection"): MATCH is high in
    the cycle whose IN completes the pattern, combinationally from IN and the bits clocked in
    since reset (bits before a reset do not count)."""

    history: UInt[4]  # the last four bits clocked in, the newest in bit 0
    seen: UInt[3]  # how many of them were clocked in since reset (saturates at 4)

    def reset(self):
        self.history = 0
        self.seen = 0

    def process(self, IN: Bool) -> Match:
        match = IN and self.seen == 4 and self.history == 0b1001
        self.history = wrap((self.history << 1) | (1 if IN else 0), 4)
        self.seen = min(self.seen + 1, 4)
        return Match(MATCH=match)
