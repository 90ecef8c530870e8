"""The warm pool: pre-started nodes that serve ``prefer_warm`` creates."""
