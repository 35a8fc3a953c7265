"""A child process's own peak memory, measured through a small helper interpreter.

Linux keeps a process's peak RSS across exec: a child spawned straight from a large process
(a pytest worker late in the suite, a benchmark holding a filled hub's answers) reports that
process's peak as its own. A fresh helper in between starts from ~10 MiB, and its
RUSAGE_CHILDREN is then the measured child's own peak (and its CPU time, user + system). (A
pytest worker at 625 MiB once made a gcjob run of 110 MiB look like 625 MiB.)
"""

from __future__ import annotations

MEASURE_HELPER = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
rc = subprocess.call(sys.argv[2:])
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = usage.ru_utime + usage.ru_stime
with open(sys.argv[1], "w") as f:
    json.dump({"rc": rc, "wall": wall, "maxrss_kib": usage.ru_maxrss, "cpu_s": cpu}, f)
"""
