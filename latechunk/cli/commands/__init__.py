"""One module per command of the ``latechunk`` command line, each defining its command function (registered on
:data:`latechunk.cli.app.app` by :mod:`latechunk.cli`, in the order ``latechunk --help`` lists them). A command
parses its options, builds its config from the config classes, calls one function below the command line and
prints what it did."""
