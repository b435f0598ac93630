"""The array engine's package (``mlnb.engine.array``): the study's hot stages written against the array API, run
on a GPU. The study loop and its stages are ``mlnb.study``."""
