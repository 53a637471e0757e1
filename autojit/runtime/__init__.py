"""Running a compiled version: the Executable, targets, the plan runner, devices and transfers
(docs/architecture.md)."""
