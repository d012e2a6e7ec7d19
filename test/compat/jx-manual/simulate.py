#!/usr/bin/env python3
# A stand-in simulation: prints its -n argument squared.
import sys
n = int(sys.argv[sys.argv.index("-n") + 1])
print("simulation", n, n * n)
