# model: calendar (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Time(Record):
    Hours: UInt[6]
    Mins: UInt[6]
    Secs: UInt[6]


class Calendar(Model):
    """Per cycle: the time as it is, then one second passes (seconds and minutes wrap after 59,
    hours after 23, each carrying into the next)."""

    hours: UInt[6]
    mins: UInt[6]
    secs: UInt[6]

    def reset(self):
        self.hours = 0
        self.mins = 0
        self.secs = 0

    def process(self) -> Time:
        h = self.hours
        m = self.mins
        s = self.secs
        if s == 59:
            self.secs = 0
            if m == 59:
                self.mins = 0
                if h == 23:
                    self.hours = 0
                else:
                    self.hours = h + 1
            else:
                self.mins = m + 1
        else:
            self.secs = s + 1
        return Time(Hours=h, Mins=m, Secs=s)
