"""Decisions: pure functions over plain records. No I/O, no clock: `now` is passed in."""
