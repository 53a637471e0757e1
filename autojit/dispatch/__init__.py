"""The decorated function: signature -> Executable -> route -> run -> fallback
(docs/architecture.md)."""
