# model: adder_pipe_64bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    result: UInt[65]


class AdderPipe64(Model):
    """Each operand pair taken with i_en comes out, in order, as the 65-bit sum with o_en high
    (pipelined: the latency is the design's, up to the task's bound)."""

    def reset(self):
        pass

    def process(self, adda: UInt[64], addb: UInt[64]) -> Out:
        return Out(result=adda + addb)
