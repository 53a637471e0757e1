"""Routing: the cost model, calibration, the router against the oracle, failure handling on the
simulated devices."""
