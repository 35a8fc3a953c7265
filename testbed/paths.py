"""Where things are in the repository, for tests and bench/ wherever they sit."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEMO = PROJECT_ROOT / "fixtures" / "demo"  # the demo snapshot `gcjob sweep --snapshot` reads
