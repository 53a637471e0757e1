"""Optional native helpers, built at install time; autojit works without them (slower)."""
