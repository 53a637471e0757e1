"""Shared test set-up: makes ``oracle`` importable and keeps runs deterministic."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
