"""Command-line front end: thin commands over the plan and model services."""
