"""Statistics, the registry of decorated functions, reports (docs/architecture.md)."""
