"""The GitHub Actions runtime: annotations, the job summary, step outputs and the output fence."""
