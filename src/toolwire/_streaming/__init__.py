"""Driving a live stream: sources, deadlines and the sync and async readers, over a sans-IO
flow."""
