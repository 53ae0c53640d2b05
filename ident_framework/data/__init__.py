"""Recorded data: the dataset type, CSV logs (`csv_log`, with `csv_columns`), ROS bags,
preprocessing (filtering, differentiation, trimming) and the parallel filter of friction
columns."""
