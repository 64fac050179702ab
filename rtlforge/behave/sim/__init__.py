"""BEHAVE-Sim: the BEHAVE task format and the timing-flexible checker for RTL and models.

:mod:`.task` (format + loader), :mod:`.protocols`, :mod:`.stimulus`, :mod:`.testbench` (the
generated file-driven testbench), :mod:`.run` (sandboxed Icarus run, log reading),
:mod:`.verilator` (the Verilator backend and its build cache), :mod:`.cocotb_bench` (the cocotb
backend; :mod:`.cocotb_tb` is its test, run inside the simulator, never imported),
:mod:`.match` (matching policies), :mod:`.check` (``check_rtl``, ``check_model``, the result).
docs/behave-sim.md describes the format and every choice.
"""
