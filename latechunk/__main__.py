"""``python -m latechunk`` runs the command line."""

from latechunk.cli import main

if __name__ == "__main__":  # guarded: spawned worker processes import the main module again
    main()
