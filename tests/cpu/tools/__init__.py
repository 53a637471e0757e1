"""The command line, the demo and examples, the benchmark workloads, the README commands."""
