"""``python -m latechunk.cli`` runs the command line, as ``python -m latechunk`` does."""

from latechunk.cli import main

if __name__ == "__main__":  # importing the module (tools, multiprocessing) must not run the CLI
    main()
