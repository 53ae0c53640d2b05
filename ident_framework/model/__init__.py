"""The robot model: kinematics and inertia (URDF/MJCF/UR description), the joint torque
regressor with friction columns, base parameters, physical consistency."""
