"""`python -m fabriclens`."""

from fabriclens.cli.app import main

main()
