"""Build a ``scripted``-generator script from the LLM outputs RTLLM v2 ships, for ``refine``.

RTLLM ships five independent GPT-4 trials and five GPT-3.5 trials of 29 designs
(``_chatgpt4/t1..t5``, ``_chatgpt35/t1..t5``). This maps them onto the loop's agents so a
refinement run on RTLLM replays real model outputs without a model: ``genius`` answers with the
GPT-4 trials in order, ``fast`` with the GPT-3.5 trials, and ``debug``/``optimize`` (and any other
agent) with the GPT-4 trials from the last one backwards. The answers do not depend on the
prompt, so such a run measures the loop's mechanics and routing over real, often wrong, designs
(what feedback would change is not measured). Tasks without shipped outputs are left out and
listed on stderr.

    python examples/refine/rtllm_script.py ../shared/benchmarks/rtllm runs/rtllm-script.json
    rtlforge refine --tasks ../shared/benchmarks/rtllm --format rtllm --generator scripted \
        --generator-option path=runs/rtllm-script.json $(cat runs/rtllm-script.tasks) ...
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from rtlforge.tasks.rtllm import load_llm_outputs, load_rtllm


def build(root: Path) -> dict[str, dict[str, list[str]]]:
    tasks = {t.id: t for t in load_rtllm(root)}
    by_method: dict[str, dict[str, dict[int, str]]] = {}
    for folder in ("_chatgpt4", "_chatgpt35"):
        outputs = load_llm_outputs(root / folder, tasks)
        per_task: dict[str, dict[int, str]] = defaultdict(dict)
        for sample in outputs.samples:
            per_task[sample.task_id][int(sample.extra["trial"])] = sample.completion
        by_method[folder] = per_task
    script: dict[str, dict[str, list[str]]] = {}
    for task_id in sorted(tasks):
        gpt4 = [text for _, text in sorted(by_method["_chatgpt4"].get(task_id, {}).items())]
        gpt35 = [text for _, text in sorted(by_method["_chatgpt35"].get(task_id, {}).items())]
        if not gpt4 and not gpt35:
            continue
        script[task_id] = {"genius": gpt4 or gpt35, "fast": gpt35 or gpt4,
                           "*": list(reversed(gpt4 or gpt35))}
    return script


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root, out = Path(argv[0]), Path(argv[1])
    script = build(root)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(script, indent=1), encoding="utf-8")
    flags = " ".join(f"--task {task_id}" for task_id in script)
    out.with_suffix(".tasks").write_text(flags + "\n", encoding="utf-8")
    missing = sorted({t.id for t in load_rtllm(root)} - set(script))
    print(f"{len(script)} tasks scripted -> {out}; without outputs: {', '.join(missing)}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
