"""PPA (power, performance, area) estimators: ``yosys-sta`` (default) and ``yosys-abc``.

``yosys-sta``: yosys maps the design onto a liberty library (``stat -liberty`` gives the area),
then OpenSTA times the mapped netlist (critical-path arrival) and estimates power from a global
switching activity. ``yosys-abc`` stops after mapping and reads ABC's own ``stime`` delay: about
twice as fast, for screening and ranking only (see ``docs/ppa.md``).

OpenSTA loads a big liberty file slowly (sky130: ~0.5 s) and times a small netlist in ~5 ms, so
by default each worker thread keeps one sandboxed ``sta`` process alive, feeds it commands over
stdin and reads up to a sentinel. A query that overruns its deadline kills the process, which is
restarted for the next one; ``persistent=False`` runs one ``sta`` per design instead.

Every number leaving this package is in ns, um^2 and mW whatever the library's own units. Nothing
here ever returns a placeholder: a design that cannot be measured raises :class:`PPAError`.

The package by noun: :mod:`.errors`, :mod:`.liberty` (which library, its leakage),
:mod:`.synthesis` (yosys's logs and netlists), :mod:`.yosys` (the yosys run of every flow and
``yosys-abc``), :mod:`.sta` (``yosys-sta``); this module registers them and the ``ppa`` command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rtlforge.core.errors import RtlforgeError, is_infra
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.models import Candidate, SourceFile
from rtlforge.eda.liberty import LibertyError
from rtlforge.plugins.estimators.ppa.errors import PPAError, PPATimeoutError
from rtlforge.plugins.estimators.ppa.liberty import cell_leakage, resolve_liberty
from rtlforge.plugins.estimators.ppa.sta import CLOCK_NAMES, YosysStaPPA
from rtlforge.plugins.estimators.ppa.yosys import (
    YOSYS_BACKENDS,
    YosysAbcPPA,
    _YosysFlow,
    pyosys_location,
)
from rtlforge.sandbox.runner import Limits, SandboxRunner

__all__ = ["CLOCK_NAMES", "ESTIMATORS", "PPAError", "PPATimeoutError", "YosysAbcPPA", "YosysStaPPA",
           "cell_leakage", "pyosys_location", "resolve_liberty"]


ESTIMATORS: dict[str, type[_YosysFlow]] = {YosysStaPPA.name: YosysStaPPA,
                                           YosysAbcPPA.name: YosysAbcPPA}


@hookimpl
def register_ppa_estimators(register: Register) -> None:
    register(YosysStaPPA)
    register(YosysAbcPPA)


def _read_design(path: Path) -> str:
    import click

    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise click.UsageError(f"{path} is not a UTF-8 text file") from exc


@hookimpl
def register_commands(cli: Any) -> None:
    import click

    @cli.command(name="ppa")
    @click.argument("designs", nargs=-1, required=True,
                    type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--top", help="Top module (default: the one module no other instantiates).")
    @click.option("--liberty", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                  help="Liberty file (.lib or .lib.gz); default: the bundled generic library.")
    @click.option("--clock", help="Clock port, or several comma-separated (default: "
                  "clk/clock/clk_i... if present, else clock-like names such as wclk,rclk).")
    @click.option("--period", type=click.FloatRange(min=0, min_open=True),
                  help="Clock period in ns (default 10; also the abc -D target when given).")
    @click.option("--estimator", type=click.Choice(sorted(ESTIMATORS)), default="yosys-sta",
                  show_default=True)
    @click.option("--activity", type=click.FloatRange(min=0, max=2, min_open=True),
                  default=0.1, show_default=True, help="Global switching activity (yosys-sta).")
    @click.option("--yosys", "yosys_backend", type=click.Choice(YOSYS_BACKENDS), default="auto",
                  show_default=True,
                  help="pyosys: the in-jail pyosys worker; binary: the yosys executable; "
                       "auto: pyosys when installed.")
    @click.option("--timeout", type=click.FloatRange(min=0.1), default=300.0, show_default=True)
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
    def ppa(designs: tuple[Path, ...], top: str | None, liberty: Path | None, clock: str | None,
            period: float | None, estimator: str, activity: float, yosys_backend: str,
            timeout: float, as_json: bool) -> None:
        """Area (um^2), critical-path delay (ns) and power (mW) of DESIGN files."""
        import json
        import sys

        from rtlforge.cmdline import EXIT_INFRA, EXIT_NOT_PASSED, design_top

        try:
            files = tuple(SourceFile(name=p.name, content=_read_design(p)) for p in designs)
            top = design_top(files, top)
            candidate = Candidate(files=files)
            options: dict[str, Any] = {"liberty": liberty, "timeout": timeout,
                                       "yosys": yosys_backend}
            if estimator == "yosys-sta":
                options.update(activity=activity, persistent=False)
            est = ESTIMATORS[estimator](**options)
            est.liberty  # noqa: B018 - a bad liberty file is a usage error, reported now
        except (ValueError, UnicodeDecodeError, LibertyError) as exc:
            raise click.UsageError(str(exc)) from exc
        try:
            result = est.estimate(candidate, top, SandboxRunner(Limits(timeout_s=timeout)),
                                  clock=clock, period_ns=period)
        except RtlforgeError as exc:
            if is_infra(exc):  # tool missing, sandbox down: nothing is known about the design
                click.echo(f"error: {exc}", err=True)
                sys.exit(EXIT_INFRA)
            stage, log = (exc.stage, exc.log) if isinstance(exc, PPAError) else (None, "")
            message = str(exc)
            if as_json:
                click.echo(json.dumps({"error": message, "stage": stage}))
            else:
                # the message carries the tool's error lines; the whole log (banner and all)
                # only with -v
                click.echo(f"error: {message}", err=True)
                if log and click.get_current_context().find_root().params.get("verbose"):
                    click.echo(log[-2000:], err=True)
            sys.exit(EXIT_NOT_PASSED)
        summary = {
            "area_um2": result.area_um2, "delay_ns": result.delay_ns,
            "power_mw": result.power_mw, "cells": result.cells, "liberty": result.liberty,
            "estimator": estimator, "units": result.details["units"],
            "details": result.details, "tools": [t.model_dump() for t in result.tools],
        }
        if as_json:
            click.echo(json.dumps(summary))
            return
        click.echo(f"area   {result.area_um2:12.3f} um^2   ({result.cells} cells)")
        click.echo(f"delay  {result.delay_ns:12.4f} ns")
        click.echo(f"power  {result.power_mw:12.6f} mW   ({result.details['power_kind']})")
        click.echo(f"liberty {result.liberty}")
