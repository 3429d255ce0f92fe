"""Rendering results: JSON, YAML, tables."""
