"""Kinds: personas a node takes (instruction, tools, skills, model)."""
