#!/bin/bash
# test_ga (Global Arrays on ARMCI-MPI on gpuic windows), run like test_armci: its three global
# arrays are at least three windows.
RMA_USER_PROG=test_ga RMA_USER_WINDOWS=3 exec bash "$(dirname "$0")/test_armci.sh"
