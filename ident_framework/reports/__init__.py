"""The run directory: its file names (`run_files`), the writer (`run_report`), parameters.yaml
(`parameters`), the printed summary (`summary`), table cells (`tables`), the closed loop's
table (`loop_table`), plots, the staging folder (`run_directory`) and a sweep's comparison
(`sweep`)."""
