"""Lineage: fork, revive, recycle, relaunch-root, promote and demote."""
