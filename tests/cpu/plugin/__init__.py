"""The pytest plugin and ``autojit.testing``."""
