"""Control flow: loops, branches, scratch arrays and sizes from arguments (issue 15)."""
