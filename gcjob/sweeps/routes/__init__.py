"""The routes sweep, one folder: judge.py (the judgement, pure), scan.py (its reads of the
hub), act.py (its writes), sweep.py (the batch run), explain.py (one object, read by name)."""
