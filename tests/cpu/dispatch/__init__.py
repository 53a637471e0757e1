"""The dispatcher's front end: guards, static arguments, the native fast path, the call path,
the walking skeleton."""
