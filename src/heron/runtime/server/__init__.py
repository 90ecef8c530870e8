"""The daemon's HTTP server: the FastAPI app, middleware, routing and the process."""
