"""The run directory: file names, run report, summary, plots, sweep tables."""
