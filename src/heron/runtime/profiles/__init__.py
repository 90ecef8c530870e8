"""Profiles: the store and defaults a node runs under."""
