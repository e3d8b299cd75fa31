"""What the MPI test workers share: ``report`` and ``raises``.

``report(line)``: every rank's line, printed by rank 0 in rank order. Lines that
the ranks print themselves can interleave on mpiexec's output, even within a
line; the tests parse these lines, so rank 0 gathers and prints them.
"""
from mpi4py import MPI


def report(line: str) -> None:
    lines = MPI.COMM_WORLD.gather(line)
    if MPI.COMM_WORLD.Get_rank() == 0:
        print("\n".join(lines), flush=True)


def raises(error_type, call, *needles):
    """Assert that ``call()`` raises ``error_type`` with every needle in its message;
    return the error."""
    try:
        call()
    except error_type as error:
        for needle in needles:
            assert needle in str(error), (needle, str(error))
        return error
    raise AssertionError(f"expected {error_type.__name__} containing {needles}")
