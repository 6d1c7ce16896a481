"""Tools: the toolbox, schemas from signatures, validation of the model's arguments."""
