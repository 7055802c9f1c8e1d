"""The application layer: ``find_harmful``, tabular input, the model registry, reports, the CLI."""
