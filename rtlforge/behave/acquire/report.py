"""The HTML report of one acquisition round: admissions, rejections and why.

Self-contained (no scripts, no external assets); every text from a role, a source or a task is
escaped, since all of it is untrusted.
"""

from __future__ import annotations

import html
from pathlib import Path

from rtlforge.behave.acquire.round import AcquisitionRecord, RoundResult

__all__ = ["render_report", "write_report"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 70em; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: .3em .5em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
.admission { color: #1a7f37; } .rejection { color: #b42318; }
.exclusion { color: #8a5a00; } .unresolved { color: #555; }
pre { white-space: pre-wrap; margin: 0; font-size: .9em; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


_PLURAL = {"admission": "admissions", "rejection": "rejections", "exclusion": "exclusions",
           "unresolved": "unresolved"}


def _attempts(record: AcquisitionRecord) -> str:
    if not record.attempts:
        return ""
    rows = []
    for a in record.attempts:
        check = "" if a.check_verdict is None else f"{a.check_verdict} ({a.mismatches} mism.)"
        review = "" if a.reviewer is None else (
            f"reviewer: {a.reviewer.decision}, spec "
            f"{'matches' if a.reviewer.spec_matches_sources else 'does not match'} the sources")
        rows.append(f"<li>round {a.attempt}: <b>{_e(a.outcome)}</b> ({_e(a.reason)}) "
                    f"{_e(check)} {_e(review)}<pre>{_e(a.message)}</pre></li>")
    return "<ol>" + "".join(rows) + "</ol>"


def _table(records: list[AcquisitionRecord], kind: str) -> str:
    if not records:
        return f"<p>No {_PLURAL[kind]}.</p>"
    rows = "".join(
        f"<tr><td class='{_e(r.kind)}'>{_e(r.candidate or '-')}</td>"
        f"<td>{_e(', '.join(r.sources))}</td><td>{_e(r.task_id or '')}</td>"
        f"<td>{_e(r.reason)}</td><td><pre>{_e(r.message)}</pre>{_attempts(r)}</td></tr>"
        for r in records)
    return ("<table><tr><th>candidate</th><th>sources</th><th>task</th><th>reason</th>"
            f"<th>why</th></tr>{rows}</table>")


def render_report(result: RoundResult) -> str:
    counts = {kind: len(result.of(kind))  # type: ignore[arg-type]
              for kind in ("admission", "rejection", "exclusion", "unresolved")}
    summary = ", ".join(f"{n} {kind if n == 1 else _PLURAL[kind]}" for kind, n in counts.items())
    gaps = "".join(f"<li>{_e(g)}</li>" for g in result.gaps) or "<li>(none named)</li>"
    sections = "".join(
        f"<h2>{title}</h2>{_table(result.of(kind), kind)}"  # type: ignore[arg-type]
        for title, kind in (("Admissions", "admission"), ("Rejections", "rejection"),
                            ("Excluded sources", "exclusion"), ("Unresolved", "unresolved")))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Acquisition round "
            f"{result.round}</title><style>{_STYLE}</style></head><body>"
            f"<h1>Acquisition round {result.round}</h1><p>{_e(summary)}</p>"
            f"<h2>Capability gaps (Analyst)</h2><ul>{gaps}</ul>"
            f"<h2>Experience note</h2><p>{_e(result.experience or '(none)')}</p>"
            f"{sections}</body></html>\n")


def write_report(result: RoundResult, directory: str | Path) -> Path:
    """Write ``report.html`` and ``records.jsonl`` into ``directory``; returns the HTML path."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "records.jsonl").write_text(
        "".join(r.model_dump_json() + "\n" for r in result.records), encoding="utf-8")
    path = folder / "report.html"
    path.write_text(render_report(result), encoding="utf-8")
    return path
