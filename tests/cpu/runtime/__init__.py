"""The runtime under a call: kernels split across threads, the native worker team, exit and fork
after a split call."""
