"""``python -m latechunk`` runs the command line."""

from latechunk.cli import main

if __name__ == "__main__":  # importing the module (tools, multiprocessing) must not run the CLI
    main()
