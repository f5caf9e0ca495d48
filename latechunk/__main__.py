"""``python -m latechunk`` runs the command line."""

from latechunk.cli import main

main()
