"""Durable conversations, recordings and approvals (built on the turn)."""
