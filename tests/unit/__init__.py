"""Fast tests of single parts: no compiler runs."""
