"""Defensive compilation (chapter §6.9): untrusted text stays data."""
