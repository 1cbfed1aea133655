"""The decision-estimation coefficient: the average-constrained and offset programs of linear
models and finite classes, their certified solvers, and the curves and bounds of Table 1."""
