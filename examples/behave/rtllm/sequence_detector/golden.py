# model: sequence_detector (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Detected(Record):
    sequence_detected: Bool


class SequenceDetector(Model):
    """Moore detector of 1,0,0,1 on data_in: sequence_detected is high in the cycle after the
    clock edge that took the pattern's last bit (state S4). Overlapping matches count, as in
    the reference (S4 continues to S1 or S2); bits before a reset do not count."""

    history: UInt[4]  # the last four bits clocked in, the newest in bit 0
    seen: UInt[3]  # how many of them were clocked in since reset (saturates at 4)

    def reset(self):
        self.history = 0
        self.seen = 0

    def process(self, data_in: Bool) -> Detected:
        detected = self.seen == 4 and self.history == 0b1001
        self.history = wrap((self.history << 1) | (1 if data_in else 0), 4)
        self.seen = min(self.seen + 1, 4)
        return Detected(sequence_detected=detected)
