"""The parent side of a job: resolve the options, then start the ranks (torch elastic launch or mpirun),
watch them, and name the root cause when one fails."""
