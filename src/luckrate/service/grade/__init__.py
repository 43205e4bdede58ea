"""Grade: a completed trace (or run) read as a trajectory, graded against its spec, and what grading
produced handed on: counts to the recorder, verdict lines, verdict events, the run viewer's ring.
"""
