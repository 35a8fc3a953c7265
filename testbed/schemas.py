"""The JSON Schemas gcjob ships (gcjob/report/), each checked once and compiled once.

`jsonschema.validate(instance, schema)` checks the schema itself on every call: over the
thousand records of one end-to-end run that cost more than the run.
"""

from __future__ import annotations

import json
from importlib import resources

from jsonschema import Draft202012Validator


def _validator(name: str) -> Draft202012Validator:
    schema = json.loads(resources.files("gcjob.report").joinpath(name).read_text("utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


REPORT = _validator("schema.json")  # each stdout line of `gcjob sweep`
EXPLAIN = _validator("explain.schema.json")  # `gcjob explain --output json`
