"""The namespaces sweep's writes: none. It is report-only by design (docs/rules.md, "Hub
namespaces"): no delete, no mark, no patch is ever sent to a namespace. Its declaration
(sweep.py) says `would-delete` for a leftover that holds nothing, without a deleter."""

from __future__ import annotations

WRITES: tuple[str, ...] = ()  # the verbs it sends to the hub beyond reads: none
# What the one orphan it finds says in place of a mark or a delete.
NO_MARK = "report-only: no mark is written and nothing is deleted"
