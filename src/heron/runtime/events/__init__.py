"""Node events: the durable numbered log, the live hubs and the SSE route."""
