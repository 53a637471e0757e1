"""Control flow (issue 15): the source converter, loop and branch regions, scratch arrays,
sizes from arguments, the loop-program generator and corpus."""
