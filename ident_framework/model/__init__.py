"""The robot model: kinematics and inertia (URDF/MJCF/UR description), the joint torque
regressor with friction columns, base parameters, friction terms, physical consistency, and
where the arm may go: its workspace and the batched kinematics of its points."""
