"""`neuronctl setup`: the system layer (Neuron repository and key, kernel headers, driver,
runtime, collectives, tools) planned from the host's facts as ordered, checkable steps, rendered
as text, a POSIX sh script or JSON, applied step by step; and a Dockerfile for the user space."""
