"""Fleet operations: one srun step over a Slurm cluster, and the drift report across its nodes."""
