"""Orchestration: children, outcome delivery, yield and wait."""
