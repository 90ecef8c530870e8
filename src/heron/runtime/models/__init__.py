"""Models: installed API keys, the default model, provider readiness and the pool."""
