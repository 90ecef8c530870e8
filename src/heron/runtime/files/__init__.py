"""Host files: peek, list and atomic writes."""
