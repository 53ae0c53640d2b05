"""Recorded data: the dataset type, CSV logs, preprocessing (filtering, differentiation,
trimming)."""
