"""Memory: a profile's notes by path, versioned and searchable."""
