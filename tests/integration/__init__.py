"""Integration tests: the embedded API server and the environments, exercised over real HTTPS."""
