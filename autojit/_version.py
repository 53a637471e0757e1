"""The package version (its own module: the cache keys read it without importing autojit)."""

__version__ = "0.1.0"
