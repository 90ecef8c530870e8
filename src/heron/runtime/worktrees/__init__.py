"""Managed git worktrees: a node working on a branch of its own."""
