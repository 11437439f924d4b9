"""Models and helpers for testing and benchmarking Kiln."""
