# model: traffic_light (RTLLM v2), written from its design_description.txt
#
# The description's prose (60 green / 5 yellow / 10 red cycles) and its "design track" differ;
# the track (and the reference) decide: a state register moves on when the counter reads 3, the
# next lights (p_*) are registered once more before they reach the outputs, and the counter is
# reloaded when a registered light goes off (red -> 10, green -> 60, yellow -> 5), else counts
# down (8 bits, wrapping below 0). A pass request while green shortens the count to 10 only when
# it is above 10 (the reference's `cnt > 10`, as the prose says). Reset: counter 10, all off.
from rtlforge.behave.model.dsl import *


class Phase(Enum):
    IDLE = 0
    RED = 1
    YELLOW = 2
    GREEN = 3


class Lights(Record):
    clock: UInt[8]
    red: Bool
    yellow: Bool
    green: Bool


class TrafficLight(Model):
    """Per cycle: the visible counter and lights, then one clock edge of the controller."""

    phase: Phase
    cnt: UInt[8]
    p_red: Bool
    p_yellow: Bool
    p_green: Bool
    red: Bool
    yellow: Bool
    green: Bool

    def reset(self):
        self.phase = Phase.IDLE
        self.cnt = 10
        self.p_red = False
        self.p_yellow = False
        self.p_green = False
        self.red = False
        self.yellow = False
        self.green = False

    def process(self, pass_request: Bool) -> Lights:
        shown_cnt = self.cnt
        shown_red = self.red
        shown_yellow = self.yellow
        shown_green = self.green
        # the counter, from the registered lights and their next values before this edge
        if pass_request and self.green and self.cnt > 10:
            cnt = 10
        elif not self.green and self.p_green:
            cnt = 60
        elif not self.yellow and self.p_yellow:
            cnt = 5
        elif not self.red and self.p_red:
            cnt = 10
        else:
            cnt = wrap(self.cnt - 1, 8)
        self.red = self.p_red
        self.yellow = self.p_yellow
        self.green = self.p_green
        expired = self.cnt == 3
        if self.phase == Phase.IDLE:
            self.p_red = False
            self.p_yellow = False
            self.p_green = False
            self.phase = Phase.RED
        elif self.phase == Phase.RED:
            self.p_red = True
            self.p_yellow = False
            self.p_green = False
            if expired:
                self.phase = Phase.GREEN
        elif self.phase == Phase.YELLOW:
            self.p_red = False
            self.p_yellow = True
            self.p_green = False
            if expired:
                self.phase = Phase.RED
        else:
            self.p_red = False
            self.p_yellow = False
            self.p_green = True
            if expired:
                self.phase = Phase.YELLOW
        self.cnt = cnt
        return Lights(clock=shown_cnt, red=shown_red, yellow=shown_yellow, green=shown_green)
