"""The simulated robot: a perturbed model of the arm, its true friction, and a MuJoCo
simulation of it tracking a trajectory."""
