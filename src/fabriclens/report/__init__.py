"""Rendering: JSON documents (the stable API) and terminal text."""
