"""One writer of the PostgreSQL benchmarks (postgres.sh, pg-cluster.sh): rewrites the lastName of
each given Employee in turn through a mount, with fsync, from START until UNTIL (Unix times), and
prints how many writes it made.

Usage: fsync-writer.py MOUNT "KEY KEY ..." START UNTIL
"""
import os, sys, time

mnt, keys, start, until = sys.argv[1], sys.argv[2].split(), float(sys.argv[3]), float(sys.argv[4])
n = 0
time.sleep(max(0, start - time.time()))  # every writer starts at once, loaded or not
while time.time() < until:
    for key in keys:
        fd = os.open("%s/Employee/p%s/lastName" % (mnt, key), os.O_WRONLY | os.O_TRUNC)
        os.write(fd, b"W%d\n" % n); os.fsync(fd); os.close(fd); n += 1
        if time.time() >= until: break
print(n)
