"""Where a call runs: cost model, rules, router, breaker, load, calibration, simulated devices
(docs/architecture.md)."""
