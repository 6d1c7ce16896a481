"""Integrations with durable execution engines; each module imports its engine only."""
