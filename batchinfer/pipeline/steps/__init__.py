"""One module per pipeline Lambda, named as its step: each parses nothing (``lambda/`` does),
calls the library below it and returns the typed state part the state machine carries on.
A step never imports another step."""
