"""Draw reward_mean per step from training runs' metrics.jsonl as a small standalone SVG.

Used for the curves in docs/training.md; needs nothing beyond the standard library (the figure is
a few lines and axes, not worth a plotting dependency)::

    python benchmarks/plot_rewards.py runs/ppo-ast/metrics.jsonl --label "seed 0" \\
        --title "PPO, AST reward" --out docs/img/ppo-ast-reward.svg

Several files give several lines (one ``--label`` each, in order). ``--summary k`` also prints the
mean of the first and last k steps of every run (null rewards, i.e. all samples abstained, are
skipped), the figures the docs quote next to the plot.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
WIDTH, HEIGHT = 560, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 34, 44


def read_curve(path: Path, key: str = "reward_mean") -> list[tuple[int, float]]:
    """(step, value) for every metrics line with a numeric ``key``."""
    points = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn last line
        value = record.get(key) if isinstance(record, dict) else None
        if isinstance(value, int | float) and isinstance(record.get("step"), int):
            points.append((record["step"], float(value)))
    return points


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def render_svg(curves: Sequence[tuple[str, list[tuple[int, float]]]], *, title: str,
               ylabel: str = "reward_mean", xlabel: str = "step",
               legend: str = "top-left") -> str:
    """An SVG line chart of the curves (label, points), with axes, ticks and a legend
    (``legend``: top-left or bottom-right, whichever corner the curves leave free)."""
    xs = [x for _, pts in curves for x, _ in pts]
    ys = [y for _, pts in curves for _, y in pts]
    if not xs:
        raise ValueError("no points to plot")
    x_lo, x_hi = min(xs), max(max(xs), min(xs) + 1)
    pad = (max(ys) - min(ys)) * 0.08 or 1.0
    y_lo, y_hi = min(ys) - pad, max(ys) + pad
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + (x - x_lo) / (x_hi - x_lo) * plot_w

    def sy(y: float) -> float:
        return TOP + (y_hi - y) / (y_hi - y_lo) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="13">'
           f'{escape(title)}</text>']
    for y in _ticks(y_lo, y_hi):
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" '
                   'stroke="#e5e5e5"/>')
        out.append(f'<text x="{LEFT - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
    for x in _ticks(x_lo, x_hi, 6):
        out.append(f'<text x="{sx(x):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
                   f'{x:g}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" '
               'stroke="#444"/>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle">'
               f'{escape(xlabel)}</text>')
    out.append(f'<text transform="translate(14 {TOP + plot_h / 2}) rotate(-90)" '
               f'text-anchor="middle">{escape(ylabel)} (higher is better)</text>')
    for i, (label, pts) in enumerate(curves):
        colour = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                   'stroke-width="1.6"/>')
        if legend == "bottom-right":
            lx, ly = WIDTH - RIGHT - 200, TOP + plot_h - 24 - 15 * (len(curves) - 1 - i)
        else:
            lx, ly = LEFT, TOP + 14 + 15 * i
        out.append(f'<line x1="{lx + 10}" x2="{lx + 30}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{lx + 35}" y="{ly}">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def first_last(points: list[tuple[int, float]], k: int) -> tuple[float, float]:
    """Mean of the first k and of the last k values."""
    ys = [y for _, y in points]
    if len(ys) < k:
        raise ValueError(f"need at least {k} points, got {len(ys)}")
    return sum(ys[:k]) / k, sum(ys[-k:]) / k


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("metrics", nargs="+", type=Path, help="metrics.jsonl files")
    parser.add_argument("--label", action="append", default=[], help="one per file, in order")
    parser.add_argument("--title", default="reward per step")
    parser.add_argument("--key", default="reward_mean")
    parser.add_argument("--out", type=Path, required=True, help="the SVG to write")
    parser.add_argument("--summary", type=int, metavar="K", default=0,
                        help="print the first-K and last-K means of every run")
    args = parser.parse_args(argv)
    labels = args.label + [str(p) for p in args.metrics[len(args.label):]]
    curves = [(label, read_curve(p, args.key)) for label, p in zip(labels, args.metrics,
                                                                     strict=True)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render_svg(curves, title=args.title, ylabel=args.key), encoding="utf-8")
    if args.summary:
        for label, pts in curves:
            lo, hi = first_last(pts, args.summary)
            k = args.summary
            print(json.dumps({"run": label, "steps": len(pts), f"first_{k}": round(lo, 3),
                              f"last_{k}": round(hi, 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
