"""Host I/O: the only layer (with bench and lab) that touches the machine."""
