"""The run directory: its file names (`run_files`), the writer with its all-or-nothing staging
(`run_report`), parameters.yaml (`parameters`), the printed summary (`summary`), table cells
(`tables`), the closed loop's table (`loop_table`), plots, the tuning's table
(`tuning_report`), run.mcap (`mcap_export`), a sweep's comparison (`sweep`) and the fleet
report (`fleet`)."""
