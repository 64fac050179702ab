"""pass@k per category and per difficulty (CVDP reports both) from ``evaluate_samples``, and a
multi-file task's completions turned into candidates by the files it wants."""

from __future__ import annotations

from rtlforge.core.answers import ANSWER_FILES_KEY
from rtlforge.core.models import Candidate, Task, ValidationReport, Verdict
from rtlforge.evaluation.evaluate import candidate_from_completion, evaluate_samples


class ByText:
    """A stand-in pipeline: a candidate passes when its text says PASS, else fails (or
    INFRA gives an infrastructure error)."""

    def validate(self, task: Task, candidate: Candidate) -> ValidationReport:
        text = " ".join(f.content for f in candidate.files)
        verdict = (Verdict.PASS if "PASS" in text else
                   Verdict.INFRA_ERROR if "INFRA" in text else Verdict.FAIL)
        return ValidationReport(verdict=verdict, task_id=task.id)


def task(task_id: str, category: str | None, difficulty: str | None) -> Task:
    return Task(id=task_id, spec="s", top="m", category=category,
                metadata={"difficulty": difficulty} if difficulty else {})


def code(word: str) -> str:
    return f"module m; // {word}\nendmodule\n"


def test_pass_at_k_is_reported_per_category_and_difficulty() -> None:
    tasks = {t.id: t for t in (task("a", "cid002", "easy"), task("b", "cid002", "medium"),
                               task("c", "cid016", "easy"), task("d", None, None))}
    samples = [("a", code("PASS")), ("a", code("no")),     # 1 of 2
               ("b", code("no")), ("b", code("no")),       # 0 of 2
               ("c", code("PASS")), ("c", code("PASS")),   # 2 of 2
               ("d", code("PASS")), ("d", code("INFRA"))]  # no group; infra not counted
    result = evaluate_samples(samples, tasks, ByText(), ks=(1, 2),  # type: ignore[arg-type]
                              check_goldens=False)
    assert result.groups == {
        "category": {"cid002": {"tasks": 2, "pass@1": 0.25, "pass@2": 0.5},
                     "cid016": {"tasks": 1, "pass@1": 1.0, "pass@2": 1.0}},
        "difficulty": {"easy": {"tasks": 2, "pass@1": 0.75, "pass@2": 1.0},
                       "medium": {"tasks": 1, "pass@1": 0.0, "pass@2": 0.0}}}
    assert result.summary()["pass_at_k_by"] == result.groups
    # d has one counted sample: pass@2 cannot be estimated, so the overall mean leaves it out
    assert result.pass_at_k == {1: (0.5 + 0.0 + 1.0 + 1.0) / 4}


def test_tasks_without_categories_add_no_breakdown() -> None:
    tasks = {"x": task("x", None, None)}
    result = evaluate_samples([("x", code("PASS"))], tasks, ByText(),  # type: ignore[arg-type]
                              ks=(1,), check_goldens=False)
    assert result.groups == {} and "pass_at_k_by" not in result.summary()


def test_a_multi_file_task_gets_one_candidate_file_per_file_it_wants() -> None:
    wants = Task(id="t", spec="s", top="top", metadata={ANSWER_FILES_KEY: [
        {"path": "rtl/a.sv", "name": "a.sv"}, {"path": "rtl/top.sv", "name": "top.sv"}]})
    answer = "```verilog rtl/top.sv\nmodule top; endmodule\n```\n" \
             "```verilog rtl/a.sv\nmodule a; endmodule\n```\n"
    candidate = candidate_from_completion(wants, answer, index=3, generator="g")
    assert [f.name for f in candidate.files] == ["a.sv", "top.sv"]
    assert candidate.task_id == "t" and candidate.provenance.sample_index == 3
    plain = candidate_from_completion(Task(id="p", spec="s", top="m"), answer, index=0)
    assert [f.name for f in plain.files] == ["design.v"]
