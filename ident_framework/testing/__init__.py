"""Helpers for tests and studies, not used at run time: the command line in a subprocess and
plugin distributions made on the fly (`cli`), known-truth data (`known_truth`), the RTDE
emulator as a process and a recording control interface (`rtde`), the online service as a
process (`online`), ROS bags written from a recording (`rosbag_writer`), the drift study
(`drift_study`), the model selection's test cases (`tuning_cases`) and the package's import
graph (`import_graph`)."""
