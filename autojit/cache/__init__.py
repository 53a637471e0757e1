"""The persistent compile cache: keys, files, disk slots (docs/architecture.md)."""
