"""How `gcjob explain` prints a trace: numbered text for a person, or one JSON document.

Evidence can hold values read from the cluster (annotation text, names): control characters
are escaped in text, so nothing read can move the cursor or recolour a terminal.
"""

from __future__ import annotations

from typing import Any

from gcjob import __version__
from gcjob.decide.explanation import Conclusion, Explanation
from gcjob.report.records import rfc3339
from gcjob.visible import json_text
from gcjob.visible import visible as escape

BOLD, RESET = "\033[1m", "\033[0m"


def _conclusion(c: Conclusion | None) -> dict[str, str] | None:
    if c is None:
        return None
    return {"object": c.subject, "action": c.action, "reason": c.reason, "detail": c.detail}


def as_json(out: Explanation) -> dict[str, Any]:
    target = out.target
    return {
        "version": __version__,
        "target": {
            "kind": target.kind,
            "namespace": target.namespace,
            "name": target.name,
            "sweep": out.sweep.value,
        },
        "source": out.source,
        "decided_at": rfc3339(out.decided_at),
        "min_age_seconds": int(out.min_age.total_seconds()),
        "steps": [
            {
                "n": n,
                "object": s.subject,
                "rule": s.step.rule,
                "outcome": s.step.outcome.value,
                "evidence": s.step.evidence,
                "reads": list(s.reads),
            }
            for n, s in enumerate(out.steps, 1)
        ],
        "verdict": _conclusion(out.verdict),
        "binding": _conclusion(out.binding),
    }


def render_json(out: Explanation) -> str:
    return json_text(as_json(out))  # C1 and bidi characters escaped too


def _verdict_line(label: str, c: Conclusion) -> str:
    return escape(f"{label}: {c.action} ({c.reason}): {c.subject}: {c.detail}")


def render_text(out: Explanation, bold: bool) -> str:
    target = out.target
    lines = [
        escape(
            f"{target} ({out.sweep.value} sweep), from {out.source} at "
            f"{rfc3339(out.decided_at)}, minimum age {int(out.min_age.total_seconds())}s"
        )
    ]
    subject = str(target)
    for n, traced in enumerate(out.steps, 1):
        on = "" if traced.subject == subject else f" [{traced.subject}]"
        step = traced.step
        lines.append(escape(f"{n:>2}. {step.rule}{on}: {step.outcome.value}: {step.evidence}"))
        lines.extend(escape(f"      read: {read}") for read in traced.reads)
    verdicts = []
    if out.binding is not None:
        verdicts.append(_verdict_line("then its binding", out.binding))
    if out.verdict is not None:
        verdicts.append(_verdict_line("verdict", out.verdict))
    for line in verdicts:
        lines.append(f"{BOLD}{line}{RESET}" if bold else line)
    return "\n".join(lines)
