"""Where the checkout under test lies, for tests that start a child interpreter or read
the docs: one place, so a test file moving to another folder depth cannot get it wrong."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
