"""kcoral server: job API, queue, GPU leases, job store and the Docker executor."""
