"""Codebooks: versions, facets, categories, proposals. Imports nothing from annotator."""
