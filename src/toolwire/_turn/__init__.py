"""One model turn: ``run_turn`` composes the stream, validation, execution and the next
request's messages; early abort, turn identity and retries."""
