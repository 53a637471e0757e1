"""Tests that launch on a real CUDA device (marked ``gpu``, skipped without one)."""
