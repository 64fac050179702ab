# model: magic_lock (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *


class LockOut(Record):
    open: Bool
    armed: Bool


class Lock(Model):
    armed: Bool

    def reset(self):
        self.armed = False

    def process(self, code: UInt[16]) -> LockOut:
        visible = self.armed
        opened = False
        if code == 0x1234:
            self.armed = True
        elif self.armed and code == 0xBEEF:
            opened = True
            self.armed = False
        else:
            self.armed = False
        return LockOut(open=opened, armed=visible)
