"""Helpers for tests and studies (not used at run time)."""
