"""MPI RMA through mpi4py, as a Python user writes it: every window flavor, every
communication call and every synchronization mode, with the data checked by numpy.

Run under mpirun with --mca osc gpuic; each window must be served by gpuic (its name).
Exits non-zero with a message naming the failed check.  RMA_WINDOW_PREFIX (default
"gpuic window") is the expected start of each window's name; set it to "" to run the same checks
against another osc component for comparison.
"""
import os
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
right = (rank + 1) % size
left = (rank - 1) % size
N = 64
I8 = np.dtype(np.int64).itemsize
# the MPI type mpi4py picks for int64 numpy buffers (MPI_LONG here); accumulate needs the same
# basic type on both sides, so target types use it too
DT = MPI._typedict[np.dtype(np.int64).char]


def fail(what):
    sys.stderr.write("rank %d: FAIL %s\n" % (rank, what))
    sys.stderr.flush()
    comm.Abort(1)


def check(cond, what):
    if not cond:
        fail(what)


def expect(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        fail("%s: got %d elements, expected %d" % (what, got.size, want.size))
    bad = np.flatnonzero(got != want)
    if bad.size:
        i = bad[0]
        fail("%s: %d elements differ, first at [%d]: got %d, expected %d"
             % (what, bad.size, i, got[i], want[i]))


PREFIX = os.environ.get("RMA_WINDOW_PREFIX", "gpuic window")


def check_gpuic(win, flavor):
    name = win.Get_name()
    check(name.startswith(PREFIX), "%s window is named %r, expected %r..." % (flavor, name, PREFIX))


def pattern(r, salt=0):
    return np.arange(N, dtype=np.int64) + 1000 * r + 100000 * salt


def as_array(win, dtype=np.int64):
    return np.frombuffer(win.tomemory(), dtype=dtype)


def test_allocate_fence():
    """Win.Allocate; Put, Get and Accumulate in fence epochs."""
    win = MPI.Win.Allocate(N * I8, I8, comm=comm)
    check_gpuic(win, "Allocate")
    mem = as_array(win)
    mem[:] = -1
    win.Fence()
    win.Put(pattern(rank), right)
    win.Fence()
    expect(mem, pattern(left), "Put in fence to the right neighbor")

    got = np.zeros(N, dtype=np.int64)
    win.Fence()
    win.Get(got, right)
    win.Fence()
    expect(got, pattern(rank), "Get in fence from the right neighbor")

    # every rank adds its rank + 1 to every element of rank 0, at an offset of 8 elements
    win.Fence()
    win.Accumulate(np.full(N - 8, rank + 1, dtype=np.int64), 0, target=(8, N - 8, DT),
                   op=MPI.SUM)
    win.Fence()
    if rank == 0:
        want = pattern(left).copy()
        want[8:] += size * (size + 1) // 2
        expect(mem, want, "Accumulate(SUM) from all ranks at displacement 8")
    win.Free()


def test_create_lock():
    """Win.Create on numpy memory; Lock shared and exclusive, Get_accumulate, Fetch_and_op,
    Compare_and_swap, Accumulate with MAX and REPLACE."""
    mem = np.zeros(N, dtype=np.int64)
    win = MPI.Win.Create(mem, I8, comm=comm)
    check_gpuic(win, "Create")

    # exclusive lock: a read-modify-write counter in rank 0, one increment per rank
    one = np.ones(1, dtype=np.int64)
    old = np.zeros(1, dtype=np.int64)
    olds = []
    for _ in range(5):
        win.Lock(0, MPI.LOCK_EXCLUSIVE)
        win.Fetch_and_op(one, old, 0, 0, MPI.SUM)
        win.Unlock(0)
        olds.append(int(old[0]))
    check(len(set(olds)) == 5 and all(0 <= o < 5 * size for o in olds),
          "Fetch_and_op returned old values %s" % olds)
    all_olds = sorted(sum(comm.allgather(olds), []))
    expect(all_olds, list(range(5 * size)), "Fetch_and_op old values over all ranks")
    comm.Barrier()
    if rank == 0:
        check(mem[0] == 5 * size, "Fetch_and_op counter is %d, expected %d" % (mem[0], 5 * size))

    # shared lock: Get_accumulate fetches the right neighbor's slot and adds to it
    comm.Barrier()
    mem[1:] = rank * 10
    comm.Barrier()
    res = np.zeros(4, dtype=np.int64)
    win.Lock(right, MPI.LOCK_SHARED)
    win.Get_accumulate(np.full(4, 7, dtype=np.int64), res, right, target=(4, 4, DT),
                       op=MPI.SUM)
    win.Unlock(right)
    expect(res, np.full(4, right * 10), "Get_accumulate result (old target values)")
    comm.Barrier()
    expect(mem[4:8], np.full(4, rank * 10 + 7), "Get_accumulate effect at the target")

    # Compare_and_swap: each rank tries to install its rank in rank 0's slot 1 from -1;
    # exactly one wins and every loser sees the winner's value
    comm.Barrier()
    if rank == 0:
        mem[1] = -1
    comm.Barrier()
    cmp = np.array([-1], dtype=np.int64)
    res1 = np.zeros(1, dtype=np.int64)
    win.Lock(0, MPI.LOCK_SHARED)
    win.Compare_and_swap(np.array([rank], dtype=np.int64), cmp, res1, 0, 1)
    win.Unlock(0)
    won = comm.allgather(int(res1[0]) == -1)
    check(sum(won) == 1, "Compare_and_swap winners: %s" % won)
    winner = won.index(True)
    check(int(res1[0]) in (-1, winner), "Compare_and_swap saw %d, winner %d" % (res1[0], winner))
    comm.Barrier()
    if rank == 0:
        check(mem[1] == winner, "Compare_and_swap left %d, expected %d" % (mem[1], winner))

    # MAX from every rank, then a REPLACE, into the left neighbor's slots 10..11
    comm.Barrier()
    mem[10:12] = 0
    comm.Barrier()
    win.Lock(0, MPI.LOCK_SHARED)
    win.Accumulate(np.array([rank * 3], dtype=np.int64), 0, target=(10, 1, DT), op=MPI.MAX)
    win.Unlock(0)
    win.Lock(left, MPI.LOCK_EXCLUSIVE)
    win.Accumulate(np.array([rank + 500], dtype=np.int64), left, target=(11, 1, DT),
                   op=MPI.REPLACE)
    win.Unlock(left)
    comm.Barrier()
    if rank == 0:
        check(mem[10] == (size - 1) * 3, "Accumulate(MAX) gave %d" % mem[10])
    check(mem[11] == right + 500, "Accumulate(REPLACE) gave %d, expected %d" % (mem[11], right + 500))
    win.Free()


def test_lock_all_flush_requests():
    """Lock_all with Flush, Flush_local and Flush_all; Rput and Rget requests."""
    win = MPI.Win.Allocate(2 * N * I8, I8, comm=comm)
    check_gpuic(win, "Allocate (lock_all)")
    mem = as_array(win)
    mem[:] = 0
    comm.Barrier()
    win.Lock_all()
    src = pattern(rank, 1)
    req = win.Rput(src, right, target=(0, N, DT))
    req.Wait()              # local completion: src may be reused
    src2 = pattern(rank, 2)
    win.Put(src2, right, target=(N, N, DT))
    win.Flush(right)        # remote completion before the barrier tells the target
    comm.Barrier()
    win.Sync()
    expect(mem[:N], pattern(left, 1), "Rput under lock_all")
    expect(mem[N:], pattern(left, 2), "Put + Flush under lock_all")

    # Rget the left neighbor's whole window; several requests completed with Waitall
    got = np.zeros(2 * N, dtype=np.int64)
    reqs = [win.Rget(got[k * 16:(k + 1) * 16], left, target=(k * 16, 16, DT))
            for k in range(2 * N // 16)]
    MPI.Request.Waitall(reqs)
    comm.Barrier()          # every Rget is done before the accumulates below change slot 0
    want = np.concatenate([pattern((left - 1) % size, 1), pattern((left - 1) % size, 2)])
    expect(got, want, "Rget of the left neighbor's window")

    # Accumulate into every rank, then Flush_all; Get after Flush_local
    for t in range(size):
        win.Accumulate(np.full(1, rank + 1, dtype=np.int64), t, target=(0, 1, DT),
                       op=MPI.SUM)
    win.Flush_all()
    comm.Barrier()
    one = np.zeros(1, dtype=np.int64)
    win.Get(one, rank, target=(0, 1, DT))
    win.Flush_local(rank)
    check(one[0] == pattern(left, 1)[0] + size * (size + 1) // 2,
          "Accumulate + Flush_all gave %d" % one[0])
    win.Unlock_all()
    win.Free()


def test_shared():
    """Allocate_shared + Shared_query: direct loads of a neighbor's segment, Put under PSCW."""
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    nrank, nsize = node.Get_rank(), node.Get_size()
    win = MPI.Win.Allocate_shared(N * I8, I8, comm=node)
    check_gpuic(win, "Allocate_shared")
    buf, disp_unit = win.Shared_query((nrank + 1) % nsize)
    check(disp_unit == I8, "Shared_query disp_unit %d" % disp_unit)
    peer_mem = np.frombuffer(buf, dtype=np.int64)
    check(peer_mem.size == N, "Shared_query size %d" % peer_mem.size)
    mine = as_array(win)
    win.Lock_all()
    mine[:] = pattern(nrank, 3)
    win.Sync()
    node.Barrier()
    win.Sync()
    expect(peer_mem, pattern((nrank + 1) % nsize, 3), "load from the Shared_query segment")
    win.Unlock_all()

    # PSCW on the shared window: each rank exposes to its left and accesses its right
    grp = node.Get_group()
    r, l = (nrank + 1) % nsize, (nrank - 1) % nsize
    to = grp.Incl([r])
    frm = grp.Incl([l])
    node.Barrier()
    win.Post(frm)
    win.Start(to)
    win.Put(pattern(nrank, 4), r)
    win.Complete()
    win.Wait()
    expect(mine, pattern(l, 4), "Put in a PSCW epoch on the shared window")
    to.Free(); frm.Free(); grp.Free()
    win.Free()
    node.Free()


def test_dynamic():
    """Create_dynamic + Attach: addresses exchanged with Get_address, PSCW epochs with Get,
    Put and Accumulate, then Detach."""
    win = MPI.Win.Create_dynamic(comm=comm)
    check_gpuic(win, "Create_dynamic")
    mem = np.full(N, -1, dtype=np.int64)
    win.Attach(mem)
    addrs = comm.allgather(MPI.Get_address(mem))
    grp = comm.Get_group()
    # a star: rank 0 accesses everyone else, everyone else exposes to rank 0
    if rank == 0:
        others = grp.Excl([0])
        for step in range(2):
            if size > 1:
                win.Start(others)
                for t in range(1, size):
                    if step == 0:
                        win.Put(pattern(t, 5), t, target=(addrs[t], N, DT))
                    else:
                        win.Accumulate(np.full(N, 3, dtype=np.int64), t,
                                       target=(addrs[t], N, DT), op=MPI.SUM)
                win.Complete()
        got = np.zeros(N, dtype=np.int64)
        if size > 1:
            win.Start(others)
            win.Get(got, size - 1, target=(addrs[size - 1], N, DT))
            win.Complete()
            expect(got, pattern(size - 1, 5) + 3, "Get through the dynamic window")
        others.Free()
    else:
        zero = grp.Incl([0])
        for _ in range(3):
            win.Post(zero)
            win.Wait()
        expect(mem, pattern(rank, 5) + 3, "Put + Accumulate into attached memory")
        zero.Free()
    grp.Free()
    comm.Barrier()
    win.Detach(mem)
    win.Free()


for t in (test_allocate_fence, test_create_lock, test_lock_all_flush_requests, test_shared,
          test_dynamic):
    t()
    comm.Barrier()
    if rank == 0:
        print("%s: ok" % t.__name__, flush=True)
if rank == 0:
    print("mpi4py_rma: PASS (%d ranks)" % size)
