"""Crons: schedules that create nodes from a template at each tick."""
