"""Checkpoints: the file format, a run's resumable state and the estimator mixin."""
