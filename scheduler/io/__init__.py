"""Reading workloads, platforms and events files; writing Batsim-compatible outputs."""
