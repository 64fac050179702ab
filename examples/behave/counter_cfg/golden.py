# model: counter_cfg (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *


class CountOut(Record):
    count: UInt[4]
    wrap: Bool


class CounterCfg(Model):
    """Per-cycle: process returns what is visible in the cycle (`count`, and `wrap` while
    `en` is high at the limit), then commits the clock edge. `limit` is configuration."""

    count: UInt[4]

    def reset(self):
        self.count = 0

    def process(self, limit: UInt[4], en: Bool) -> CountOut:
        at_limit = self.count == limit
        visible = self.count
        if en:
            if at_limit:
                self.count = 0
            else:
                self.count = wrap(self.count + 1, 4)
        return CountOut(count=visible, wrap=en and at_limit)
