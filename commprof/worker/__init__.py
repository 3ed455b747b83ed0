"""What runs inside each rank: process group and run folder, training, the sweep, bench and
capability-matrix workers, clock measurement, and joining a job that an MPI launcher started."""
