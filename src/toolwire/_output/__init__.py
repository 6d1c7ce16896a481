"""Structured output: the text channel (or a forced tool) read as one typed value, with
typed, monotonic previews."""
