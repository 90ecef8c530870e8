"""Jobs: background commands a node started, listed and cancellable."""
