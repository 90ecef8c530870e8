"""The canvas: the graph of nodes as a person's UI shows it, and history search."""
