"""Pure figures from raw measurements (no I/O): serving metrics, HTTP attribution."""
