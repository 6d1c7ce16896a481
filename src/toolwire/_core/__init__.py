"""The sans-IO core: partial JSON, framing, events, the assembler, and the vocabulary of a
provider table and of the next request's messages. Nothing here touches a socket, a clock or
a database, or names a wire format's package: the table is ``toolwire._providers``'s."""
