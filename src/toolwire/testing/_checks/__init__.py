"""Request checks: refuse, with the provider's 400, what the provider itself would refuse.

One check per format (Ollama declares none); each reads the request once, O(size of the
body), and returns the provider's error message or ``None``.
"""
