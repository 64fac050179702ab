"""Build a ``scripted``-generator script for ``refine`` on the bundled tasks (examples/tasks).

Each task is answered like a model that needs one correction: first its module header alone
(the outputs undriven, so simulation fails), then the task's golden design, but only when the
prompt carries validation feedback (the heading the built-in roles put above it). A run over
this script therefore shows the loop's mechanics: a failing first attempt, feedback in the
next prompt, a pass in the second iteration, with every decision and its cost in the trace.
It does not measure a model: the fix is the golden.

    python examples/refine/bundled_script.py examples/tasks runs/bundled-script.json
    rtlforge refine --tasks examples/tasks --generator scripted \
        --generator-option path=runs/bundled-script.json --run-dir runs/refine-bundled
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rtlforge.agents.roles.common import FEEDBACK_HEADING
from rtlforge.tasks.loader import load_tasks


def build(root: Path) -> dict[str, dict[str, list[object]]]:
    script: dict[str, dict[str, list[object]]] = {}
    for task in load_tasks(root):
        if not task.golden:
            continue
        right = "\n".join(f.content for f in task.golden)
        header = right[:right.index(");") + 2]
        script[task.id] = {"*": [
            f"```verilog\n{header}\nendmodule\n```",
            {"text": f"```verilog\n{right}```", "when_prompt_contains": FEEDBACK_HEADING},
        ]}
    return script


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    script = build(Path(argv[0]))
    out.write_text(json.dumps(script, indent=1), encoding="utf-8")
    print(f"{len(script)} tasks scripted -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
