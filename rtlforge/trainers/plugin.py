"""Registers the trainer plugins and the ``rtlforge train`` command.

The plugin host imports this module at start-up, so it must stay light: the trainer modules are
imported inside the hook (they keep torch & co. inside functions too), and a trainer module that
is absent is simply not registered, while one that is present but broken is reported by the host.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rtlforge.core.hookspecs import Register, hookimpl

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost

#: (module, class) of every trainer rtlforge ships; modules that do not exist are skipped.
TRAINERS: tuple[tuple[str, str], ...] = (
    ("rtlforge.trainers.sft", "SFTTrainer"),
    ("rtlforge.trainers.grpo", "GRPOTrainer"),
    ("rtlforge.trainers.ppo", "PPOTrainer"),
)


def _import_trainer(module: str, cls: str) -> type | None:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:  # the module itself is missing, not one of its imports
            return None
        raise
    return getattr(mod, cls, None)


@hookimpl
def register_trainers(register: Register) -> None:
    for module, cls in TRAINERS:
        trainer = _import_trainer(module, cls)
        if trainer is not None:
            register(trainer)


@hookimpl
def register_commands(cli: Any, host: PluginHost) -> None:
    import click

    @cli.command(name="train")
    @click.argument("config_path", metavar="CONFIG.yaml",
                    type=click.Path(dir_okay=False, path_type=Path))
    @click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path),
                  help="Output directory (overrides 'out_dir' in the config).")
    def train(config_path: Path, out: Path | None) -> None:
        """Train a model as CONFIG.yaml says (trainer: sft | grpo | ppo).

        Writes metrics.jsonl, checkpoints/ and final/ under the output directory. Exit codes:
        0 done, 2 config error, 3 infrastructure error (missing library, device, data).
        """
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        from rtlforge.cmdline import EXIT_INFRA, EXIT_OK, EXIT_USAGE
        from rtlforge.core.errors import PluginError, RtlforgeError
        from rtlforge.trainers.config import create_trainer, load_config, resolve_out_dir
        from rtlforge.trainers.errors import TrainerConfigError

        err = Console(stderr=True)
        _quiet_library_bars()
        _quiet_library_deprecations()
        try:
            config = load_config(config_path, host=host)
            out_dir = resolve_out_dir(config, out)
            host.get("trainer", config.trainer)  # unknown trainer: a config error, now
        except (TrainerConfigError, PluginError) as exc:
            err.print(f"[red]config error:[/red] {exc}", markup=True, highlight=False)
            sys.exit(EXIT_USAGE)

        with Progress("[progress.description]{task.description}", BarColumn(),
                      MofNCompleteColumn(), TimeElapsedColumn(),
                      "{task.fields[info]}", console=err) as progress:
            bar = progress.add_task(f"{config.trainer} training", total=config.steps, info="")

            headline = config.headline_metric()

            def on_record(record: Any) -> None:
                step = record.get("step")
                if isinstance(step, int):
                    shown = {k: record[k] for k in dict.fromkeys((headline, "reward_mean",
                                                                  "loss"))
                             if isinstance(record.get(k), int | float)}
                    progress.update(bar, completed=step,
                                    info=" ".join(f"{k}={v:.4g}" for k, v in shown.items()))

            try:
                # --out travels in the config: from_config is the whole construction contract
                config = config.model_copy(update={"out_dir": str(out_dir)})
                trainer = create_trainer(config, host=host, progress=on_record)
                summary = trainer.train()
            except TrainerConfigError as exc:
                err.print(f"[red]config error:[/red] {exc}", markup=True, highlight=False)
                sys.exit(EXIT_USAGE)
            except (RtlforgeError, OSError, ImportError) as exc:
                err.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
                sys.exit(EXIT_INFRA)
        import json

        curve = headline_curve(out_dir / "metrics.jsonl", headline)
        click.echo(json.dumps({"headline": curve, **summary}, indent=2, default=str))
        sys.exit(EXIT_OK)


def headline_curve(metrics: Path, name: str, window: int = 3) -> dict[str, Any]:
    """The headline metric's first and last values and the means of the first and last
    ``window`` steps that logged it: what a reader checks to see that the run learned."""
    from rtlforge.trainers.metrics import read_metrics

    values = [r[name] for r in (read_metrics(metrics) if metrics.exists() else [])
              if isinstance(r.get(name), int | float) and isinstance(r.get("step"), int)]
    if not values:
        return {"metric": name, "steps": 0}
    head, tail = values[:window], values[-window:]
    return {"metric": name, "steps": len(values), "first": values[0], "last": values[-1],
            f"first_{len(head)}_mean": sum(head) / len(head),
            f"last_{len(tail)}_mean": sum(tail) / len(tail)}


def _quiet_library_deprecations() -> None:
    """transformers' FutureWarnings about its own renames, raised when TRL or peft call the old
    names: nothing a user of ``rtlforge train`` can act on, and they buried the progress bar.
    Only this command filters them; the library leaves warnings to its host."""
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning,
                            module=r"(transformers|trl|peft)(\.|$)")


def _quiet_library_bars() -> None:
    """The CLI draws one rich bar; the libraries' own tqdm bars would interleave with it."""
    for module, func in (("datasets", "disable_progress_bars"),
                         ("transformers.utils.logging", "disable_progress_bar")):
        try:
            getattr(importlib.import_module(module), func)()
        except (ImportError, AttributeError):
            continue

