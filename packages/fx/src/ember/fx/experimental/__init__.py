"""``ember.fx.experimental``: symbolic shapes (``symbolic_shapes.ShapeEnv``, ``sym_node.SymNode``)."""
