"""The late-vs-naive evaluator: datasets, parse cache, metrics, paired bootstrap, the compare harness, reports."""
