"""The sans-IO core: partial JSON, framing, events, the assembler, the provider table and
the messages of the next request. Nothing here touches a socket, a clock or a database."""
