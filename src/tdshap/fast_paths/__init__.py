"""Exact fast paths: chains evaluated incrementally for models that allow it."""
