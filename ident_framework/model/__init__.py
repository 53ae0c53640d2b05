"""The robot model: kinematics and inertia (URDF/MJCF/UR description), the joint torque
regressor with friction columns (and the one a run's config asks for), base parameters,
friction terms, physical consistency (and the pipeline's physical check), and where the arm
may go: its workspace and the batched kinematics of its points."""
