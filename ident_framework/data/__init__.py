"""Recorded data: the dataset type, CSV logs (`csv_log`, with `csv_columns` and `csv_mapping`
for columns named otherwise), preprocessing (filtering, differentiation, trimming) and the
parallel filter of friction columns."""
