"""Helpers shared by the test tiers (no tests here): ``oracle`` (plain NumPy as the oracle),
``corpus`` and ``programs`` (the op corpus and sample programs), ``cpu_support`` and
``routing_support`` (CPU-backend and router helpers), and the CUDA kernel catalogue
(``cuda_cases``, ``cuda_layouts``, ``reduction_cases``, ``scan_cases``, ``translation_unit``)
that ``tests/cuda_compile`` and ``tests/gpu`` share."""
