"""The simulator's encoders: one module per wire format, each the inverse of its adapter."""
