"""The task layouts rtlforge reads, as plain constants: the CLI names them in its options
without importing the loaders (``rtlforge --help`` stays light)."""

from __future__ import annotations

#: The task layouts :func:`rtlforge.tasks.loader.find_tasks` reads; ``auto`` tells them apart.
TASK_FORMATS = ("auto", "suite", "rtllm", "verilogeval", "cvdp")
#: What each layout looks like, for the message when a folder holds none.
TASK_LAYOUTS = {
    "suite": "suite: task.toml in DIR or its direct subfolders",
    "rtllm": "rtllm: design folders with testbench.v and one verified_*.v",
    "verilogeval": "verilogeval: ProbNNN_name_{prompt.txt,ref.sv,test.sv}",
    "cvdp": "cvdp: a CVDP JSONL file (one {id, categories, input, output, harness} a line)",
}
