"""The persistent compile cache on disk."""
