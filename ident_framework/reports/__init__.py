"""The run directory: file names (`run_files`), the all-or-nothing writer (`run_report`),
parameters.yaml (`parameters`), the printed summary and the closed loop's outputs (`summary`),
table cells (`tables`), plots, the tuning's table (`tuning_report`), run.mcap (`mcap_export`),
a sweep's comparison (`sweep`) and the fleet report (`fleet`)."""
