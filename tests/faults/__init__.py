"""The fault catalogue: one table of named faults (bad inputs, cache damage, signals,
threads, shutdown, resources), each with the contract it must keep; see catalogue.py."""
