"""What an image (or a venv) installed: one line per distribution, `name==version` and the
sha256 of its RECORD, which lists the sha256 of every file pip installed for it. Two builds
installed the same packages, file for file, when their lines are equal (docs/install.md):

    docker run --rm -i --entrypoint python IMAGE - < tools/image_packages.py

Only the standard library: it runs on the image's own Python. The .pyc files compiled after
the install are not in a RECORD (the Dockerfile makes them from the source's hash)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import re


def lines() -> list[str]:
    found = {}
    for dist in importlib.metadata.distributions():
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
        record = (dist.read_text("RECORD") or "").encode()
        found[name] = f"{name}=={dist.version} record-sha256:{hashlib.sha256(record).hexdigest()}"
    return [found[name] for name in sorted(found)]


if __name__ == "__main__":
    print("\n".join(lines()))
