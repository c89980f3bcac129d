"""The attacks that found holes, kept as tests: each reproduces one failure and fails if it comes back."""
