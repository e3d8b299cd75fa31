"""How the CUDA top rung (``tinynet.kernels.ladder.cuda_3_held``) is launched: plain Python.

A :class:`Launch` says, for a row length H, which *team* of threads takes a
row (a warp, or a block), how many of the row's elements each thread holds in
registers (and whether it loads and stores them 16 bytes at a time,
``_cuda_vectors``), and the grid of each kernel. The defaults (``GPU_LAUNCH``) were
chosen on an H200 with ``benchmarks/gpu_launch_sweep.py``; ``SIMULATOR_LAUNCH``
keeps the simulator's launches small. See docs/kernels.md.
"""
from __future__ import annotations

import dataclasses

WARP = 32
MAX_WARPS = 32                 # 1024 threads per block at most
MAX_HELD = 32                  # row elements one thread may hold in registers
MAX_TILE_ROWS = 64             # rows per block in the streaming backward, at most


@dataclasses.dataclass(frozen=True)
class RowPlan:
    """How one row length is handled: its team, and the elements each thread holds.

    ``held`` is a power of two: the thread of a team of ``threads`` that starts
    at column ``first`` holds columns ``first + k·threads`` for k < held. With
    ``held == 0`` the row is too long to hold and is streamed instead.
    """
    team: str                  # "warp" (several rows per block) or "block"
    threads: int               # threads per team
    held: int


@dataclasses.dataclass(frozen=True)
class Launch:
    """How the kernels are launched: the knobs that the tests and the sweep
    (``benchmarks/gpu_launch_sweep.py``, which chose the defaults) turn.

    The simulator runs each CUDA thread as a Python thread, so its launches
    are kept small; small ``max_block_threads`` and ``*_held`` send short rows
    down the block-team and streaming paths too.
    """
    warp_row_max_h: int = 512           # rows up to this long get a warp, longer a block
    warps_per_block: int = 4            # warp teams per block
    max_block_threads: int = 1024       # block teams: at most this many threads
    max_held_threads: int = 256         # rows are held by block teams of at most this many
    forward_held: int = 32              # forward: elements held per thread, at most
    backward_held: int = 16             # backward: elements held per thread, at most,
    backward_partial_elements: int = 1 << 19   # ... about teams·2H partial sums,
    min_backward_teams: int = 264              # ... but at least this many teams
    vector_access: bool = False         # held rows: 16-byte loads and stores where aligned
    backward_threads: int = 256         # streaming backward: threads per block,
    tile_warp_max_h: int = 1024         # ... rows up to this long summed by warps,
    tile_elements: int = 1 << 14        # ... about this many elements per block,
    min_tile_rows: int = 8              # ... but this many rows at least
    sum_columns: int = 16               # column-sum kernel: columns per block at a time,
    sum_lanes: int = 32                 # threads splitting each column,
    max_sum_blocks: int = 1024          # and blocks at most

    def __post_init__(self):
        for name in ("warps_per_block", "sum_columns", "sum_lanes"):
            if not 1 <= getattr(self, name) <= MAX_WARPS:
                raise ValueError(f"Launch.{name} must be 1 to {MAX_WARPS}; got "
                                 f"{getattr(self, name)}")
        for name in ("max_block_threads", "backward_threads"):
            threads = getattr(self, name)
            if threads % WARP or not WARP <= threads <= WARP * MAX_WARPS:
                raise ValueError(f"Launch.{name} must be a multiple of {WARP} up to "
                                 f"{WARP * MAX_WARPS}; got {threads}")
        if self.max_held_threads > 256:     # 255 registers each: a block's 64 K registers
            raise ValueError(f"Launch.max_held_threads must be at most 256; got "
                             f"{self.max_held_threads}")
        for name in ("forward_held", "backward_held"):
            if not 1 <= getattr(self, name) <= MAX_HELD:
                raise ValueError(f"Launch.{name} must be 1 to {MAX_HELD}; got "
                                 f"{getattr(self, name)}")

    def plan(self, H: int, most_held: int) -> RowPlan:
        """The team for rows of length H, and the elements each thread holds:
        ``most_held`` or fewer, on as few threads as that allows."""
        if H <= self.warp_row_max_h:
            team, threads = "warp", WARP
        else:
            team, threads = "block", WARP
            while threads < self.max_block_threads and threads * most_held < H:
                threads *= 2
        held = 1
        while held * threads < H:
            held *= 2
        holds = held <= most_held and threads <= self.max_held_threads
        return RowPlan(team, threads, held if holds else 0)

    def forward_plan(self, H: int) -> RowPlan:
        return self.plan(H, self.forward_held)

    def backward_plan(self, H: int) -> RowPlan:
        return self.plan(H, self.backward_held)

    def forward_grid(self, rows: int, H: int) -> tuple[int, int]:
        """(blocks, threads per block) of the forward: a team per row."""
        plan = self.forward_plan(H)
        if plan.team == "warp" and plan.held:
            return -(-rows // self.warps_per_block), WARP * self.warps_per_block
        return rows, plan.threads

    def backward_grid(self, rows: int, H: int) -> tuple[int, int, int]:
        """(blocks, threads per block, rows of partial sums) of the backward's first kernel.

        Held rows: ``backward_partial_elements // H`` teams (at least
        ``min_backward_teams``), each adding up dgain and dbias over its rows.
        Streamed rows: a block per tile of rows.
        """
        plan = self.backward_plan(H)
        if plan.held == 0:
            blocks = -(-rows // self.tile_rows(H))
            return blocks, self.backward_threads, blocks
        teams = min(rows, max(self.min_backward_teams, self.backward_partial_elements // H))
        teams_per_block = self.warps_per_block if plan.team == "warp" else 1
        blocks = -(-teams // teams_per_block)
        return blocks, plan.threads * teams_per_block, blocks * teams_per_block

    def tile_rows(self, H: int) -> int:
        """Rows per block in the streaming backward: fewer mean more partial sums."""
        return min(MAX_TILE_ROWS, max(self.min_tile_rows, self.tile_elements // H))

    def sum_blocks(self, H: int) -> int:
        """Blocks of the column-sum kernel for the 2H columns of the partial sums."""
        return min(self.max_sum_blocks, -(-2 * H // self.sum_columns))


GPU_LAUNCH = Launch()
SIMULATOR_LAUNCH = Launch(warps_per_block=2, max_block_threads=64, forward_held=8,
                          backward_held=8, min_backward_teams=2,
                          backward_partial_elements=256, backward_threads=64,
                          tile_elements=256, min_tile_rows=1, sum_columns=32, sum_lanes=2,
                          max_sum_blocks=2)
