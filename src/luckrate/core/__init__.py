"""The grading core: steps, specs, checks, grades, the gate and Luck Rate. Standard library only."""
