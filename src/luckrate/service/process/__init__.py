"""How the stages run: in the receiving process, or on N grading processes (``pool`` in the receiving
process, ``grading_process`` in each worker).

The wiring sits above the stages it composes: it may import any of them, and none imports it.
"""
