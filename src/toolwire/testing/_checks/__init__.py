"""Request checks: refuse, with the provider's 400, what the provider itself would refuse.

The simulator is a test of the messages a client builds, so each endpoint checks the
conversation the way its provider does, and answers a request the real API would refuse
with a 400 and the provider's error body (the SDK then raises its ``BadRequestError``).
What each provider refuses is its own knowledge, in its package
(one module per format here, listed in the simulator's table, ``_formats``): tool
results must answer the calls of the assistant turn before them, and every call must be
answered (OpenAI chat and Responses, Anthropic, Gemini, Bedrock, Cohere); Ollama, which
matches results by position and name, declares no check and refuses nothing.
``_formats.check_request`` dispatches: a body that is not a JSON object is refused
whatever the format.

Each check reads the request once: O(size of the body). A check returns the provider's
error message, or ``None`` when the request is acceptable.
"""
