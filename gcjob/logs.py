"""Operational logs on stderr (stdout carries the report)."""

from __future__ import annotations

import logging
import sys

from pythonjsonlogger.json import JsonFormatter

log = logging.getLogger("gcjob")


def setup(log_format: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(
            JsonFormatter(
                fmt=["asctime", "levelname", "name", "message"],
                rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            )
        )
    else:
        handler.setFormatter(logging.Formatter("gcjob: %(levelname)s: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
