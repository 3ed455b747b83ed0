"""Renderers: each takes only a Report."""
