"""Paths for the evaluator tests (the local Ray cluster is the session's ``ray_cluster``
fixture in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
