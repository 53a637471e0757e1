"""Loops and branches: the source converter and the control calls (issue 15)."""
