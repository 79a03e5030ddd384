"""Measurements on the host (I/O): TCP throughput and latency; collectives later."""
