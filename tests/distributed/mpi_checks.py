"""``report(line)``: every rank's line, printed by rank 0 in rank order.

Lines that the ranks print themselves can interleave on mpiexec's output, even
within a line; the tests parse these lines, so rank 0 gathers and prints them.
"""
from mpi4py import MPI


def report(line: str) -> None:
    lines = MPI.COMM_WORLD.gather(line)
    if MPI.COMM_WORLD.Get_rank() == 0:
        print("\n".join(lines), flush=True)
