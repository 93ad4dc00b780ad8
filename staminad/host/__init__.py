"""What the daemon and the viewer read off the machine they run on (load, memory, disks, GPUs, the sandboxes' usage),
shared by both so neither imports the other."""
