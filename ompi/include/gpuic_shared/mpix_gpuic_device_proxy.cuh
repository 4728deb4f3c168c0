/*
 * mpix_gpuic_device_proxy.cuh - the proxy path of the device API (included by
 * mpix_gpuic_device.cuh; not for direct use).
 *
 * A target device code cannot reach with loads and stores (a host-memory window, another
 * node, or any target when the process forces the proxy path) is served by the window's
 * device queue: a ring of work-queue entries (the layout of gpuic_wqe.h) in pinned host
 * memory mapped into the device, drained by the process's proxy thread, which validates each
 * entry against the window's key table and executes it with UCX.
 *
 * Producer protocol (GPU threads, many at once):
 *  1. reserve n slots with a fetch-and-add (a ticket) on the reservation word, which lives
 *     in device memory (device atomics on pinned host memory are not allowed over PCIe) and
 *     returns, beside the ticket, the free bound: a free index producers have seen.  The
 *     slots may be written once the proxy's free index, not its read index, shows them free:
 *     the free index is the completion index held back at the first get or atomic whose
 *     producer has not yet acknowledged its result (gpuic_dev_proxy_ack()), so a slot's
 *     staging area stays its producer's until the entry using it has completed and its result,
 *     if any, has been read.  A ticket cannot be handed back: a producer that gives up
 *     waiting for its slots (the queue's timeout, the proxy stalled) leaves them unpublished,
 *     the proxy stops there, and every later call on the queue fails the same way (the window
 *     holds the error);
 *  2. write and publish the entry in the same stores: the ring is tagged (gpuic_ring_t.tagged),
 *     each 8-byte word carries 4 bytes of the entry and the tag of its block, and the proxy
 *     takes the entry at its read index once every word is there.  No fence stands between
 *     the data and its publication (a system-scope fence over PCIe waits about a microsecond
 *     for the stores before it), and producers never wait for one another (a doorbell advanced
 *     in reservation order would chain every producer behind the slowest).  Only an entry that
 *     points to a staged payload needs a fence, between the payload and the entry's words;
 *  3. complete: the proxy stores its completion and free indexes (pinned host memory) after
 *     each round; a thread waiting for an entry, a result or a flush reads them with
 *     system-scope acquire, and a thread that read a result acknowledges it.
 * Payloads of up to GPUIC_WQE_MAX_INLINE bytes travel inside the entry; larger ones, and
 * every result, go through the slot's staging area, except for transfers of at least
 * GPUIC_DEV_PROXY_ZCOPY_MIN bytes (GPUIC_DEV_PROXY_ZCOPY_MIN_UCX to a target reached through
 * UCX) whose device buffer is global memory: their entries name that
 * buffer itself (lkey GPUIC_WQE_LKEY_DEVICE), the proxy moves it with the copy engine or UCX,
 * and the call waits for their completion (gpuic_dev_proxy_zcopy()).
 */
#ifndef MPIX_GPUIC_DEVICE_PROXY_CUH
#define MPIX_GPUIC_DEVICE_PROXY_CUH

#include <gpuic/gpuic_ring.h>
#include <gpuic/gpuic_wqe.h>

/* Entries posted per reservation when a transfer is split across staging areas. */
#define GPUIC_DEV_PROXY_BATCH 8u

/*
 * Orders a GPU thread's stores of a staged payload before its stores of the entry that points
 * to it, for the proxy thread on the host, which reads the entry's words with acquire loads
 * and the payload after them.  Entries that carry everything in their words need none.
 */
__device__ static inline void gpuic_dev_fence_stage_to_proxy(void)
{
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}

/*
 * Sends this thread's stores to pinned host memory (the entries it posted) on their way to the
 * proxy thread now, before the thread starts waiting for their completion.  Not for ordering
 * (the tagged words need none): without a system-scope fence or release the GPU keeps such
 * stores for about a microsecond before they cross PCIe, time the waiter would add to its
 * wait (docs/performance-history.md, "Device queue design measurements").  A thread that
 * posts many entries pays it once, at its flush.  The push is a release reduction adding 0 to
 * the queue's full_waits counter in device memory: a release, not a fence, so nothing this
 * thread loads afterwards is invalidated.
 */
__device__ static inline void gpuic_dev_proxy_push(MPIX_Gpuic_device_queue *q)
{
    asm volatile("red.release.sys.global.add.u64 [%0], 0;" ::"l"(&q->full_waits) : "memory");
}

/*
 * Stores two tagged words at @p p (16-byte aligned) in one vector store.  Each 8-byte element
 * is single-copy atomic for the proxy thread reading it (relaxed, system scope): it sees a
 * word whole, tag and data together, or not at all.
 */
__device__ static inline void gpuic_dev_proxy_store_tagged(uint64_t *p, uint64_t a, uint64_t b)
{
    asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b)
                 : "memory");
}

/*
 * Reads the proxy's completion index (returned) and free index (*free_p) in one load:
 * system-scope acquire, so that what the proxy wrote before it published them (results in
 * staging, data complete at the target, the acknowledgements it saw) is visible to this
 * thread's later loads and stores.  One acquire load, not relaxed reads and a fence: the fence
 * would wait for the reads still in flight.  Each index is read
 * whole; the two may be of different moments, which neither use minds.
 */
__device__ static inline uint64_t gpuic_dev_proxy_load_done(const uint64_t *done,
                                                            uint64_t *free_p)
{
    uint64_t v, f;

    asm volatile("ld.acquire.sys.global.v2.u64 {%0, %1}, [%2];"
                 : "=l"(v), "=l"(f)
                 : "l"(done)
                 : "memory");
    *free_p = f;
    return v;
}

/*
 * Hands the staging areas of the @p n entries from @p seq back once this thread has read the
 * results the proxy left there (a get's data, an atomic's old value), or given up on them: the
 * proxy holds the queue's free index at an unacknowledged result, so no later reservation
 * reuses an area (for a staged payload, or a result of its own) before it is read.
 *
 * Orders this thread's reads of the results (earlier) before the proxy's observation of the
 * acknowledgements (and so before whatever overwrites the areas after the free index moves):
 * one system-scope release fence for all @p n, then relaxed system-scope stores (a fence and a
 * relaxed store make a release pattern).  The fence waits for this thread's outstanding
 * stores too, so callers acknowledge before they store a result they hold in registers
 * (gpuic_dev_proxy_atomic(), a get of one aligned word): otherwise the fence waits for that
 * store to device memory (docs/performance-history.md).
 */
__device__ static inline void gpuic_dev_proxy_ack(const MPIX_Gpuic_device_queue *q, uint64_t seq,
                                                  unsigned n)
{
    uint64_t *acks = q->acks, mask = q->size - 1; /* read before the fence */

    asm volatile("fence.acq_rel.sys;" ::: "memory");
    for (unsigned i = 0; i < n; ++i) {
        asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(acks + ((seq + i) & mask)),
                     "l"(gpuic_ring_ack_word(seq + i))
                     : "memory");
    }
}

/*
 * Stage stamps of proxy entries (gpuic_trace.h, docs/dissection.md).  Compiled only into
 * device code built with MPIX_GPUIC_DEVICE_TRACE defined before mpix_gpuic_device.cuh is
 * included (the dissection program dissect_proxy does); without it the hooks below are empty
 * and the generated code is the same as without them.  Even when compiled in, a queue whose
 * trace_records is NULL is not stamped (one load and one branch per entry).
 *
 * Who stamps what, in the record of the entry's first slot: the producing thread issue (the
 * call began), written (slots reserved, entry built), fenced (the system-scope fence after the
 * slot stores done) and doorbell (head marker stored); the proxy thread pickup, issued and
 * remote (a libgpuic with tracing, see gpuic_trace.h); whoever observes the completion seen.
 * The record is opened before the entry is published, so the proxy's stamps never meet a
 * record still being opened; fenced and doorbell are stored after the marker (they cannot be
 * known before), into words nobody else writes.  Stamps read MPIX_GPUIC_DEVICE_TRACE_CLOCK(),
 * %globaltimer unless the includer defines it otherwise.
 */
#ifdef MPIX_GPUIC_DEVICE_TRACE
#include <gpuic/gpuic_trace.h>
#ifndef MPIX_GPUIC_DEVICE_TRACE_CLOCK
#define MPIX_GPUIC_DEVICE_TRACE_CLOCK() gpuic_trace_now()
#endif

/* The queue's trace as gpuic_trace.h's helpers take it (NULL records: not traced). */
__device__ static inline gpuic_trace_view_t gpuic_dev_proxy_trace_view(
    const MPIX_Gpuic_device_queue *q)
{
    gpuic_trace_view_t v;

    v.records = (gpuic_trace_record_t *)q->trace_records;
    v.mask = q->trace_mask;
    return v;
}
#endif

/* A stamp now, when stamps are compiled in; 0 otherwise. */
__device__ static inline uint64_t gpuic_dev_proxy_trace_now(void)
{
#ifdef MPIX_GPUIC_DEVICE_TRACE
    return MPIX_GPUIC_DEVICE_TRACE_CLOCK();
#else
    return 0;
#endif
}

/* The entry at @p seq is built: opens its record with issue = @p t_issue and written = now,
 * before the entry's publish.  Only the producer's fields are written: nothing orders these
 * stores before the proxy's stamps of an entry without a fence, so the proxy's stages are
 * left as they are (zero in a fresh trace; dissect_proxy sizes its trace so that no record is
 * used twice). */
__device__ static inline void gpuic_dev_proxy_trace_open(const MPIX_Gpuic_device_queue *q,
                                                         uint64_t seq, uint8_t opcode,
                                                         size_t len, uint64_t t_issue)
{
#ifdef MPIX_GPUIC_DEVICE_TRACE
    gpuic_trace_record_t *r = gpuic_trace_open_fields(gpuic_dev_proxy_trace_view(q), seq,
                                                      opcode, (uint32_t)len,
                                                      GPUIC_TRACE_CLOCK_DEVICE, t_issue);

    if (r != NULL) {
        r->t[GPUIC_TRACE_WRITTEN] = MPIX_GPUIC_DEVICE_TRACE_CLOCK();
    }
#else
    (void)q, (void)seq, (void)opcode, (void)len, (void)t_issue;
#endif
}

/* @p count entries of @p nbb blocks from @p first on are published: fenced at @p t_fenced
 * (their staged payloads; when they have none, the time their stores began; zero-copy
 * entries, whose fence comes before they are built, the time they were stored), their tagged
 * words stored now. */
__device__ static inline void gpuic_dev_proxy_trace_published(const MPIX_Gpuic_device_queue *q,
                                                              uint64_t first, unsigned count,
                                                              unsigned nbb, uint64_t t_fenced)
{
#ifdef MPIX_GPUIC_DEVICE_TRACE
    gpuic_trace_view_t v = gpuic_dev_proxy_trace_view(q);

    if (v.records != NULL) {
        uint64_t t = MPIX_GPUIC_DEVICE_TRACE_CLOCK();

        for (unsigned i = 0; i < count; ++i) {
            gpuic_trace_record_t *r = gpuic_trace_record(v, first + (uint64_t)i * nbb);

            r->t[GPUIC_TRACE_FENCED] = t_fenced;
            r->t[GPUIC_TRACE_DOORBELL] = t;
        }
    }
#else
    (void)q, (void)first, (void)count, (void)nbb, (void)t_fenced;
#endif
}

/* Device-scope acquire load and release max of the queue's producer words: they order GPU
 * producers among themselves (all on this GPU); a relaxed load where only the value counts. */
__device__ static inline unsigned long long gpuic_dev_proxy_ld_acquire(
    const unsigned long long *p)
{
    unsigned long long v;

    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}


__device__ static inline unsigned long long gpuic_dev_proxy_ld_relaxed(
    const unsigned long long *p)
{
    unsigned long long v;

    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

/*
 * Fetch-and-add on the reservation word (global memory) with acquire: the free bound it returns
 * orders the proxy's reads of the slots before this thread's writes to them
 * (gpuic_dev_proxy_bound_publish() says how).  Not atomicAdd(): on a pointer the compiler
 * cannot prove global, that is a generic atomic whose shared-memory check branches on a
 * predicate the atomic returns, so nothing after it issued before it completed.  The acquire
 * is needed and was measured free (docs/performance-history.md).
 */
__device__ static inline unsigned long long gpuic_dev_proxy_fetch_add(unsigned long long *p,
                                                                      unsigned long long v)
{
    unsigned long long old;

    asm volatile("atom.acquire.gpu.global.add.u64 %0, [%1], %2;"
                 : "=l"(old)
                 : "l"(p), "l"(v)
                 : "memory");
    return old;
}

/* Compare-and-swap with release on the reservation word; returns the word found. */
__device__ static inline unsigned long long gpuic_dev_proxy_cas_release(unsigned long long *p,
                                                                        unsigned long long cmp,
                                                                        unsigned long long v)
{
    unsigned long long old;

    asm volatile("atom.release.gpu.global.cas.b64 %0, [%1], %2, %3;"
                 : "=l"(old)
                 : "l"(p), "l"(cmp), "l"(v)
                 : "memory");
    return old;
}

__device__ static inline void gpuic_dev_proxy_max_release(unsigned long long *p,
                                                          unsigned long long v)
{
    asm volatile("red.release.gpu.global.max.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ static inline uint64_t gpuic_dev_now_ns(void)
{
    uint64_t t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* True once a wait that started at *t0 (0: not yet) has lasted longer than the queue's
 * timeout. */
__device__ static inline bool gpuic_dev_proxy_timed_out(const MPIX_Gpuic_device_queue *q,
                                                        uint64_t *t0)
{
    uint64_t limit = q->timeout_ns, now;

    if (limit == 0) {
        return false;
    }
    now = gpuic_dev_now_ns();
    if (*t0 == 0) {
        *t0 = now;
        return false;
    }
    return now - *t0 > limit;
}

/*
 * True when completion index @p done covers every entry below @p want.  Sequence numbers on
 * the device are tickets of the reservation word, counted modulo 2^32 (the host's index is 64
 * bits wide): they compare modulo 2^32, which is exact while fewer than 2^31 entries lie
 * between them (a ring holds fewer than 2^24).
 */
__device__ static inline bool gpuic_dev_proxy_reached(uint64_t done, uint64_t want)
{
    return (int32_t)((uint32_t)done - (uint32_t)want) >= 0;
}

/*
 * The reservation word (MPIX_Gpuic_device_queue.tickets): the next ticket (sequence number,
 * modulo 2^32) in its high half, the free bound in its low half.  A reservation adds to the
 * high half, whose carry leaves the word; the bound changes only by compare-and-swap.
 */
__device__ static inline uint32_t gpuic_dev_proxy_ticket_of(unsigned long long w)
{
    return (uint32_t)(w >> 32);
}

__device__ static inline uint32_t gpuic_dev_proxy_bound_of(unsigned long long w)
{
    return (uint32_t)w;
}

/* How many tries gpuic_dev_proxy_bound_publish() makes against reservations that change the
 * word under it before it leaves the bound where it is (each lost try is an L2 round trip on
 * the hottest word of the queue). */
#define GPUIC_DEV_PROXY_PUBLISH_TRIES 2

/*
 * Raises the free bound in the reservation word to @p free, a free index this thread read
 * with acquire, unless it is there already; @p w is the word as last seen.  The
 * compare-and-swap is a release, so a reservation whose acquire fetch-and-add returns the
 * bound (a later add reads this one's value: a release sequence) is ordered after the proxy's
 * reads of the slots below @p free, and after the reads of their results by the threads that
 * acknowledged them.  Best effort: a bound left behind only sends reservations to free_seen
 * (gpuic_dev_proxy_reserve_slow()).
 */
__device__ static inline void gpuic_dev_proxy_bound_publish(MPIX_Gpuic_device_queue *q,
                                                            unsigned long long w, uint32_t free)
{
    for (int i = 0; i < GPUIC_DEV_PROXY_PUBLISH_TRIES &&
                    (int32_t)(free - gpuic_dev_proxy_bound_of(w)) > 0;
         ++i) {
        unsigned long long next = (w & ~0xffffffffull) | free;
        unsigned long long found = gpuic_dev_proxy_cas_release(&q->tickets, w, next);

        if (found == w) {
            return;
        }
        w = found;
    }
}

/*
 * How far the free bound may stay behind an index a thread found on its first look before it
 * publishes it.  The publication is a release, and a release waits for this thread's memory
 * operations, so publishing after every put + flush would add that wait to every flush
 * (docs/performance-history.md).
 * Behind by less than this, a reservation still finds its slots free unless more than
 * size - GPUIC_DEV_PROXY_PUBLISH_LAG of them are taken (then it looks at free_seen, or waits
 * for the free index as gpuic_dev_proxy_await() does), and threads napping there are served
 * by the poller, which publishes every advance it reads in done_seen and free_seen.  At most
 * half the smallest queue.
 */
#define GPUIC_DEV_PROXY_PUBLISH_LAG 32u
static_assert(GPUIC_DEV_PROXY_PUBLISH_LAG <= MPIX_GPUIC_DEVICE_QUEUE_MIN_SLOTS / 2,
              "the free bound may lag at most half the smallest queue");
static_assert((GPUIC_DEV_PROXY_PUBLISH_LAG & (GPUIC_DEV_PROXY_PUBLISH_LAG - 1)) == 0,
              "gpuic_dev_proxy_reserve_slow() masks with it");

/*
 * How threads wait for the host's completion index (or, reserving, for its free index).  One
 * read is a PCIe round trip (about a microsecond), and the proxy's own stores travel on the
 * same link: only one thread at a time reads them (the poller, which holds a lease of
 * GPUIC_DEV_PROXY_LEASE_NS, renewed while it waits), back to back, publishing every advance in
 * done_seen and free_seen (and the free bound); the others watch those words in device
 * memory, sleeping about as long as the proxy needs to get to what they wait for
 * (GPUIC_DEV_PROXY_ENTRY_NS an entry, at most GPUIC_DEV_PROXY_NAP_MAX_NS).  Thousands of
 * threads each reading the index collapsed the queue to a few hundred thousand entries a
 * second.
 */
#define GPUIC_DEV_PROXY_LEASE_NS 4000u
#define GPUIC_DEV_PROXY_FIRST_NS 2000u
#define GPUIC_DEV_PROXY_ENTRY_NS 25u
#define GPUIC_DEV_PROXY_NAP_MAX_NS 8192u

/*
 * Reads the host's indexes (at @p done; NULL: at q->done, read again for every read of the
 * index, which saves the caller a register where the wait is not the hot path) until the
 * completion index (@p free: the free index) covers @p want (true) or %globaltimer passes
 * @p until (false), publishing every advance it sees in done_seen and free_seen for the other
 * waiters, and the free index as the reservations' free bound.
 */
__device__ static inline bool gpuic_dev_proxy_poll(MPIX_Gpuic_device_queue *q,
                                                   const uint64_t *done, uint64_t want,
                                                   uint64_t until, bool free)
{
    /* both indexes only grow: their sum changes whenever one of them does (one register
     * for both) */
    uint64_t last = gpuic_dev_proxy_ld_relaxed(&q->done_seen) +
                    gpuic_dev_proxy_ld_relaxed(&q->free_seen);

    for (unsigned n = 0;; ++n) {
        uint64_t f, v = gpuic_dev_proxy_load_done(done != NULL ? done : q->done, &f);
        bool hit = gpuic_dev_proxy_reached(free ? f : v, want);

        if (v + f != last || hit) {
            gpuic_dev_proxy_max_release(&q->done_seen, v);
            gpuic_dev_proxy_max_release(&q->free_seen, f);
            last = v + f;
        }
        /* the bound costs a load and a compare-and-swap on the reservation word: only for
         * the reservation this thread waits for (others past it look at free_seen) */
        if (hit && free) {
            gpuic_dev_proxy_bound_publish(q, gpuic_dev_proxy_ld_relaxed(&q->tickets),
                                          (uint32_t)f);
        }
        if (hit) {
            return true;
        }
        if ((n & 3) == 3 && gpuic_dev_now_ns() > until) {
            return false;
        }
    }
}

/*
 * Waits until the proxy's completion index (@p free: its free index; at @p done, as
 * gpuic_dev_proxy_poll() takes it) covers @p want: as the poller while this thread holds the
 * lease, otherwise by watching done_seen (free_seen).  @p first_poll lets the thread poll at
 * once for one round of reads, before it looks at the lease (a lone waiter, the latency case,
 * then loses no time on it).  False when the queue's timeout passed first.
 */
__device__ static inline bool gpuic_dev_proxy_await(MPIX_Gpuic_device_queue *q,
                                                    const uint64_t *done, uint64_t want,
                                                    bool first_poll, bool free)
{
    uint64_t t0 = 0;

    if (first_poll && gpuic_dev_proxy_poll(q, done, want,
                                           gpuic_dev_now_ns() + GPUIC_DEV_PROXY_FIRST_NS, free)) {
        return true;
    }
    for (;;) {
        uint64_t seen = gpuic_dev_proxy_ld_acquire(free ? &q->free_seen : &q->done_seen), now;
        unsigned long long lease;

        if (gpuic_dev_proxy_reached(seen, want)) {
            return true;
        }
        now = gpuic_dev_now_ns();
        lease = gpuic_dev_proxy_ld_relaxed(&q->poll_lease);
        if (now > lease && atomicCAS(&q->poll_lease, lease, now + GPUIC_DEV_PROXY_LEASE_NS) ==
                               lease) {
            bool hit = gpuic_dev_proxy_poll(q, done, want, now + GPUIC_DEV_PROXY_LEASE_NS, free);

            if (hit) {
                /* hand the role on at once: the others may wait for more than this one */
                atomicExch(&q->poll_lease, 0ull);
                return true;
            }
        } else {
            uint64_t nap = (uint64_t)((uint32_t)want - (uint32_t)seen) * GPUIC_DEV_PROXY_ENTRY_NS;

            __nanosleep(nap < 128 ? 128 : (nap > GPUIC_DEV_PROXY_NAP_MAX_NS
                                               ? GPUIC_DEV_PROXY_NAP_MAX_NS
                                               : (unsigned)nap));
        }
        if (gpuic_dev_proxy_timed_out(q, &t0)) {
            return false;
        }
    }
}


/*
 * The outcome of a wait on @p t that ended when completion word @p done covered its entries:
 * MPI_SUCCESS, or MPI_ERR_OTHER (recorded) when the word counts failures and the proxy marked
 * the wait's target failed (t->rank < 0, a flush of every target: any target).  The marks are
 * read after the acquire that gave @p done, and only when it counts failures: a wait that
 * meets none loads nothing more.  A target stays marked once an entry to it failed.
 */
__device__ static inline int gpuic_dev_proxy_outcome(const MPIX_Device_target *t, uint64_t done)
{
    const volatile uint32_t *marks;

    if (__builtin_expect(gpuic_ring_done_failures(done) == 0, 1)) {
        return MPI_SUCCESS;
    }
    marks = t->queue->failed;
    if (marks == NULL || marks[t->rank < 0 ? 0 : 1 + t->rank] != 0) {
        return gpuic_dev_fail(t->desc, MPI_ERR_OTHER);
    }
    return MPI_SUCCESS;
}

/*
 * Waits, its entries pushed, until the completion index at @p done_p covers every entry below
 * @p seq; @p w is the reservation word as read after the push.  MPI_ERR_OTHER (recorded) when
 * the proxy does not get there within the window's timeout, or when entries to @p t's target
 * failed (gpuic_dev_proxy_outcome()).
 */
__device__ static inline int gpuic_dev_proxy_wait_pushed(const MPIX_Device_target *t,
                                                         const uint64_t *done_p, uint64_t seq,
                                                         unsigned long long w)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    uint64_t seen, done, free;

    /* both first looks in flight together (the relaxed one first: the acquire one orders only
     * what follows it): what other threads of this GPU have seen, and the host's indexes */
    seen = gpuic_dev_proxy_ld_relaxed(&q->done_seen);
    done = gpuic_dev_proxy_load_done(done_p, &free);

    if (gpuic_dev_proxy_reached(done, seq)) {
        if ((int32_t)((uint32_t)free - gpuic_dev_proxy_bound_of(w)) >=
            (int32_t)GPUIC_DEV_PROXY_PUBLISH_LAG) {
            gpuic_dev_proxy_bound_publish(q, w, (uint32_t)free);
        }
        return gpuic_dev_proxy_outcome(t, done);
    }
    if (gpuic_dev_proxy_reached(seen, seq)) {
        seen = gpuic_dev_proxy_ld_acquire(&q->done_seen);
        if (gpuic_dev_proxy_reached(seen, seq)) {
            return gpuic_dev_proxy_outcome(t, seen);
        }
    }
    if (!gpuic_dev_proxy_await(q, done_p, seq, true, false)) {
        return gpuic_dev_fail(t->desc, MPI_ERR_OTHER);
    }
    /* at least the word that ended the wait: its poller raised done_seen to it */
    return gpuic_dev_proxy_outcome(t, gpuic_dev_proxy_ld_acquire(&q->done_seen));
}

/*
 * Pushes this thread's entries, then waits until every entry below @p seq has completed
 * (@p all: every entry reserved on the queue so far, a flush: this thread's entries, its own
 * reservations being in the relaxed load's view, and those of threads it has synchronised
 * with).  The reservation word is loaded after the push, beside the wait's first looks.
 *
 * The queue's words a wait or a reservation needs after an acquire load are read before it:
 * an acquire invalidates the SM's L1, so each such word read after it is one more L2 round
 * trip on the caller's critical path.  Here the index's address is read before the push,
 * whose wait for the stores hides the load.
 */
__device__ static inline int gpuic_dev_proxy_wait_until(const MPIX_Device_target *t,
                                                        uint64_t seq, bool all)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    const uint64_t *done = q->done;
    unsigned long long w;

    gpuic_dev_proxy_push(q);
    w = gpuic_dev_proxy_ld_relaxed(&q->tickets);
    return gpuic_dev_proxy_wait_pushed(t, done, all ? gpuic_dev_proxy_ticket_of(w) : seq, w);
}

/* Waits until every entry below @p seq has completed (gpuic_dev_proxy_wait_until()). */
__device__ static inline int gpuic_dev_proxy_wait(const MPIX_Device_target *t, uint64_t seq)
{
    return gpuic_dev_proxy_wait_until(t, seq, false);
}

/*
 * gpuic_dev_proxy_reserve() past a free bound that does not cover the slots from @p start:
 * free_seen may (the poller publishes there; acquire, as the bound's fetch-and-add), else the
 * ring is full as far as this GPU knows (back-pressure) and the thread waits for the proxy's
 * free index.
 *
 * When free_seen covers them, the reservation whose slots cross a multiple of
 * GPUIC_DEV_PROXY_PUBLISH_LAG also raises the bound to it: in a stream of puts without a flush
 * nothing else does until a reservation has to wait, so every reservation of the lap would
 * come here.  Only those few: if every reservation that came here published, their
 * compare-and-swap retries would crowd the word every reservation adds to
 * (docs/performance-history.md).
 */
__device__ static inline int gpuic_dev_proxy_reserve_slow(const MPIX_Device_target *t,
                                                          uint32_t start, unsigned n)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    uint32_t want = start + n - q->size;
    uint64_t seen = gpuic_dev_proxy_ld_acquire(&q->free_seen);

    if (gpuic_dev_proxy_reached(seen, want)) {
        if ((start & (GPUIC_DEV_PROXY_PUBLISH_LAG - 1)) < n) {
            gpuic_dev_proxy_bound_publish(q, gpuic_dev_proxy_ld_relaxed(&q->tickets),
                                          (uint32_t)seen);
        }
        return MPI_SUCCESS;
    }
    atomicAdd(&q->full_waits, 1ull);
    return gpuic_dev_proxy_await(q, NULL, want, false, true)
               ? MPI_SUCCESS
               : gpuic_dev_fail(t->desc, MPI_ERR_OTHER);
}

/*
 * Reserves @p n consecutive slots and waits until they are free; *start_p is the first one's
 * sequence number (gpuic_dev_proxy_reached() says how they count).  One fetch-and-add, which
 * returns the free bound beside the ticket, so a reservation the bound covers takes one L2
 * round trip: a second word looked at beside the fetch-and-add would hold the fetch-and-add
 * back until the look completed (docs/performance-history.md).
 */
__device__ static inline int gpuic_dev_proxy_reserve(const MPIX_Device_target *t, unsigned n,
                                                     uint64_t *start_p)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    uint32_t size = q->size; /* before the acquire (gpuic_dev_proxy_wait_until()) */
    unsigned long long w =
        gpuic_dev_proxy_fetch_add(&q->tickets, (unsigned long long)n << 32);
    uint32_t start = gpuic_dev_proxy_ticket_of(w);

    *start_p = start;
    /* unsigned: the bound is never ahead of a ticket taken after it was published */
    if ((uint32_t)(start + n - gpuic_dev_proxy_bound_of(w)) <= size) {
        return MPI_SUCCESS;
    }
    return gpuic_dev_proxy_reserve_slow(t, start, n);
}

/*
 * Writes an entry of @p nbb blocks into the tagged blocks from @p seq on, which publishes it:
 * the proxy takes it once every word is there.  A staged payload it points to must have been
 * fenced before (gpuic_dev_fence_stage_to_proxy()).
 */
__device__ static inline void gpuic_dev_proxy_write(MPIX_Gpuic_device_queue *q, uint64_t seq,
                                                    const gpuic_wqe_t *wqe, unsigned nbb)
{
    uint64_t mask = q->size - 1;

    for (unsigned b = 0; b < nbb; ++b) {
        uint64_t tag = (uint64_t)gpuic_ring_tag(seq + b, b != 0) << 32;
        uint64_t *dst = q->tagged + ((seq + b) & mask) * GPUIC_RING_TAGGED_WORDS;
        const uint64_t *src = &wqe->words[b * (GPUIC_WQE_BB_SIZE / 8)];

        /* not unrolled whole: the entry then stays in local memory (L1) instead of taking
         * registers from the caller's kernel (docs/performance-history.md, "Device register
         * counts") */
#pragma unroll 2
        for (unsigned i = 0; i < GPUIC_WQE_BB_SIZE / 8; ++i) {
            /* word 2i holds bytes 8i .. 8i+3, word 2i+1 bytes 8i+4 .. 8i+7 (little-endian) */
            uint64_t w = src[i];

            gpuic_dev_proxy_store_tagged(dst + 2 * i, tag | (uint32_t)w, tag | (w >> 32));
        }
    }
}

/*
 * gpuic_dev_proxy_reserve() for the lanes of a warp that call it together with the same queue
 * and entry size: one lane reserves for all of them (one fetch-and-add instead of up to 32
 * contending ones) and each takes its share.  *seq_p is the calling lane's first slot.  Lanes
 * that differ in queue or size form groups of their own.  A lane alone in its warp reserves
 * directly: the match and the two shuffles would only add their latency to its call (as in
 * gpuic_dev_proxy_put8()).
 */
__device__ static inline int gpuic_dev_proxy_reserve_warp(const MPIX_Device_target *t,
                                                          unsigned nbb, uint64_t *seq_p)
{
    unsigned active = __activemask(), lane = gpuic_dev_lane();

    if (active == 1u << lane) {
        return gpuic_dev_proxy_reserve(t, nbb, seq_p);
    }

    unsigned long long key =
        (unsigned long long)(uintptr_t)t->queue ^ ((unsigned long long)nbb << 60);
    unsigned group = __match_any_sync(active, key);
    unsigned leader = (unsigned)__ffs(group) - 1;
    unsigned below = __popc(group & ((1u << lane) - 1u)), total = nbb * __popc(group);
    uint64_t first = 0;
    int rc = MPI_SUCCESS;

    if (lane == leader) {
        rc = gpuic_dev_proxy_reserve(t, total, &first);
    }
    rc = __shfl_sync(group, rc, (int)leader);
    first = __shfl_sync(group, first, (int)leader);
    *seq_p = first + (uint64_t)below * nbb;
    return rc;
}

/* The staging area of slot @p seq: its device address and the host address entries carry. */
__device__ static inline char *gpuic_dev_proxy_stage(const MPIX_Gpuic_device_queue *q,
                                                     uint64_t seq, uint64_t *host)
{
    uint64_t off = (seq & (uint64_t)(q->size - 1)) * q->stage_bytes;

    *host = q->stage_host + off;
    return q->stage + off;
}

/* The header every entry to @p t at @p seq carries. */
__device__ static inline gpuic_wqe_hdr_t gpuic_dev_proxy_hdr(const MPIX_Device_target *t,
                                                             uint64_t seq)
{
    gpuic_wqe_hdr_t h;

    h.wqe_index = (uint16_t)seq;
    h.target = (uint32_t)t->rank;
    h.flags = 0;
    return h;
}

/* Blocks an inline put of @p bytes takes. */
__device__ static inline unsigned gpuic_dev_proxy_inline_bb(size_t bytes)
{
    return gpuic_wqe_ds_to_bb(2 + (unsigned)((4 + bytes + GPUIC_WQE_SEG_SIZE - 1) /
                                             GPUIC_WQE_SEG_SIZE));
}

/* Stores segment @p s (two words, @p lo and @p hi) of the entry that starts at slot @p seq of
 * the ring at @p tagged (@p mask: slots - 1): words 4(s % 4) .. 4(s % 4) + 3 of its block
 * s / 4, tagged for that block. */
__device__ static inline void gpuic_dev_proxy_store_seg(uint64_t *tagged, uint64_t mask,
                                                        uint64_t seq, unsigned s, uint64_t lo,
                                                        uint64_t hi)
{
    unsigned b = s / GPUIC_WQE_SEGS_PER_BB;
    uint64_t tag = (uint64_t)gpuic_ring_tag(seq + b, b != 0) << 32;
    uint64_t *dst = tagged + ((seq + b) & mask) * GPUIC_RING_TAGGED_WORDS +
                    (s % GPUIC_WQE_SEGS_PER_BB) * 4;

    gpuic_dev_proxy_store_tagged(dst, tag | (uint32_t)lo, tag | (lo >> 32));
    gpuic_dev_proxy_store_tagged(dst + 2, tag | (uint32_t)hi, tag | (hi >> 32));
}

/*
 * Writes lane @p k's share of the GPUIC_WQE_OP_PUT8_MULTI entry of @p c puts at slot @p seq
 * (gpuic_dev_proxy_put8()): its put's segment, and for the entry's first lane (k == 0) the
 * control segment and the padding after the last put, which publishes the entry once every
 * lane's words are there.
 */
__device__ static inline void gpuic_dev_proxy_put8_write(const MPIX_Device_target *t,
                                                         uint64_t *tagged, uint64_t mask,
                                                         uint64_t seq, unsigned k, unsigned c,
                                                         uint64_t raddr, uint64_t data,
                                                         uint64_t t0)
{
    unsigned nbb = gpuic_wqe_ds_to_bb(1 + c);
    uint64_t t_fenced;

    if (k == 0) {
        gpuic_dev_proxy_trace_open(t->queue, seq, GPUIC_WQE_OP_RDMA_WRITE, 8 * c, t0);
    }
    t_fenced = gpuic_dev_proxy_trace_now(); /* nothing staged: no fence */
    gpuic_dev_proxy_store_seg(tagged, mask, seq, 1 + k, gpuic_htobe64(raddr), data);
    if (k == 0) {
        gpuic_wqe_ctrl_seg_t ctrl;
        uint64_t w[2];

        gpuic_wqe_set_ctrl(&ctrl, (uint16_t)seq, GPUIC_WQE_OP_PUT8_MULTI, 0, (uint32_t)t->rank,
                           0, (uint8_t)(1 + c), 0, gpuic_htobe32(t->key));
        memcpy(w, &ctrl, sizeof(w));
        gpuic_dev_proxy_store_seg(tagged, mask, seq, 0, w[0], w[1]);
        for (unsigned s = 1 + c; s < nbb * GPUIC_WQE_SEGS_PER_BB; ++s) {
            gpuic_dev_proxy_store_seg(tagged, mask, seq, s, 0, 0);
        }
        gpuic_dev_proxy_trace_published(t->queue, seq, 1, nbb, t_fenced);
    }
}

/*
 * An 8-byte put to a target the proxy reaches through a mapping, by the lanes of a warp that
 * make one together (same queue, key and target; others form groups of their own): they share
 * GPUIC_WQE_OP_PUT8_MULTI entries of up to GPUIC_WQE_PUT8_MAX puts, reserved by one lane, and
 * each lane writes its own segment's tagged words (the entry's first lane its control segment
 * and the padding), so a warp of puts is 5 entries for the proxy instead of 32.  A lane alone
 * in its warp (one thread's put + flush loop) posts an entry of one put (one block) without
 * the grouping: two matches, the shuffles of the reservation and the general entry layout
 * would be on a lone put + flush's critical path (docs/performance-history.md).  The ring's
 * address and size are
 * read before the reservation (gpuic_dev_proxy_wait_until() says why); few values are live here, so
 * they cost no register where the kernel's other paths need more.
 */
__device__ static inline int gpuic_dev_proxy_put8(const MPIX_Device_target *t, const void *origin,
                                                  uint64_t raddr)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    uint64_t *tagged = q->tagged, mask = q->size - 1;
    unsigned active = __activemask(), lane = gpuic_dev_lane();
    uint64_t first = 0, data, t0 = gpuic_dev_proxy_trace_now();
    int rc;

    /* the origin is read before the call returns: when aligned (the usual case) in one load
     * whose value is first used after the reservation, which it overlaps (read as bytes, the
     * bytes were put together before the fetch-and-add was issued; in asm, since the compiler
     * otherwise merges the two branches into the byte loads) */
    if (((uintptr_t)origin & 7u) == 0) {
        asm volatile("ld.u64 %0, [%1];" : "=l"(data) : "l"(origin) : "memory");
    } else {
        memcpy(&data, origin, 8);
    }
    if (active == 1u << lane) {
        rc = gpuic_dev_proxy_reserve(t, 1, &first);
        if (rc == MPI_SUCCESS) {
            gpuic_dev_proxy_put8_write(t, tagged, mask, first, 0, 1, raddr, data, t0);
        }
        return rc;
    }

    unsigned group = __match_any_sync(active, (unsigned long long)(uintptr_t)q) &
                     __match_any_sync(active, ((unsigned long long)t->key << 32) |
                                                  (uint32_t)t->rank);
    unsigned leader = (unsigned)__ffs(group) - 1;
    unsigned n = (unsigned)__popc(group), below = (unsigned)__popc(group & ((1u << lane) - 1u));
    unsigned e = below / GPUIC_WQE_PUT8_MAX, k = below % GPUIC_WQE_PUT8_MAX;
    unsigned entries = (n + GPUIC_WQE_PUT8_MAX - 1) / GPUIC_WQE_PUT8_MAX;
    unsigned c = n - e * GPUIC_WQE_PUT8_MAX < GPUIC_WQE_PUT8_MAX ? n - e * GPUIC_WQE_PUT8_MAX
                                                                 : GPUIC_WQE_PUT8_MAX;
    unsigned last = n - (entries - 1) * GPUIC_WQE_PUT8_MAX;

    rc = MPI_SUCCESS;
    if (lane == leader) {
        /* full entries are two blocks, the last one as many as its puts need */
        rc = gpuic_dev_proxy_reserve(t, 2 * (entries - 1) + gpuic_wqe_ds_to_bb(1 + last), &first);
    }
    rc = __shfl_sync(group, rc, (int)leader);
    first = __shfl_sync(group, first, (int)leader);
    if (rc == MPI_SUCCESS) {
        gpuic_dev_proxy_put8_write(t, tagged, mask, first + 2ull * e, k, c, raddr, data, t0);
    }
    return rc;
}

/*
 * Transfers of at least this many bytes whose device buffer is global memory go without
 * staging (gpuic_dev_proxy_zcopy()): one thread copying through staging moves a few hundred
 * MB/s, so 64 KiB staged takes far longer than the proxy's copy-engine call and the wait.
 */
#define GPUIC_DEV_PROXY_ZCOPY_MIN (64u << 10)

/*
 * The same for targets the proxy reaches through UCX (not through a mapping): there each staged
 * piece would be a message of its own, and a transport without GPUDirect RDMA writes every
 * message into the target's GPU memory with a copy it waits for, so that a transfer moves at
 * the rate of its messages; one message per transfer is the transport's best.  From two
 * staging pieces (osc_gpuic_device_stage_bytes, 4 KiB by default) on.
 */
#define GPUIC_DEV_PROXY_ZCOPY_MIN_UCX (8u << 10)

/* Bytes of one zero-copy entry: pieces large enough that the proxy's per-call cost vanishes,
 * small enough that it starts moving a large transfer while the rest is being posted. */
#define GPUIC_DEV_PROXY_ZCOPY_CHUNK (8u << 20)

/* Whether a transfer of @p bytes between @p buf and target @p t goes without staging. */
__device__ static inline bool gpuic_dev_proxy_zcopy_fits(const MPIX_Device_target *t,
                                                         const void *buf, size_t bytes)
{
    /* the proxy reaches global memory by its unified address; shared and local memory exist
     * only for the kernel */
    return bytes >= (t->mapped ? GPUIC_DEV_PROXY_ZCOPY_MIN : GPUIC_DEV_PROXY_ZCOPY_MIN_UCX) &&
           __isGlobal(buf);
}

/*
 * A put (@p opcode RDMA_WRITE), get (RDMA_READ) or put-with-signal (PUT_SIGNAL: the signal
 * update at @p sig_raddr after every byte) of @p bytes between global memory at @p local and
 * @p raddr, without staging: entries of up to GPUIC_DEV_PROXY_ZCOPY_CHUNK bytes name the device
 * buffer itself (lkey GPUIC_WQE_LKEY_DEVICE), which the proxy moves with the copy engine or
 * UCX; a put-with-signal's last piece travels in its PUT_SIGNAL entry.  Returns once every
 * entry has completed: a put's origin has been read by then, as a staged put's has when it
 * returns (MPIX_Win_flush_local_device() relies on it), and a get's data is in place (a get
 * that gives up waiting, the queue's timeout passed, leaves the proxy to write the buffer
 * whenever it gets there).  Entries are built in the caller's @p wqe.  Left to inline: as a
 * call, its ABI cost wide kernels registers, stack and spills that inlining does not
 * (docs/performance-history.md, "Device register counts").
 */
__device__ static inline int gpuic_dev_proxy_zcopy(const MPIX_Device_target *t,
                                                         gpuic_wqe_t *wqe, uint8_t opcode,
                                                         const void *local, size_t bytes,
                                                         uint64_t raddr, uint64_t sig_raddr,
                                                         uint64_t value, uint8_t sig_op)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    uint64_t laddr = (uint64_t)(uintptr_t)local, seq = 0, end = 0;
    uint64_t t0 = gpuic_dev_proxy_trace_now();
    bool signal = opcode == GPUIC_WQE_OP_PUT_SIGNAL;
    uint8_t op = signal ? GPUIC_WQE_OP_RDMA_WRITE : opcode;
    /* a put-with-signal's PUT_SIGNAL entry carries its last piece */
    size_t head = signal ? (bytes - 1) / GPUIC_DEV_PROXY_ZCOPY_CHUNK * GPUIC_DEV_PROXY_ZCOPY_CHUNK
                         : bytes;
    gpuic_wqe_hdr_t h;
    int rc;

    /* what this thread (and the threads it synchronised with) stored in the buffer before
     * the call reaches memory before the proxy's copy reads or overwrites it */
    gpuic_dev_fence_stage_to_proxy();
    /* that fence comes before the entries are built, so their stamps count it in issue ->
     * written, and their fenced stamp is taken once they are stored (stages stay in order) */
    for (size_t off = 0; off < head;) {
        unsigned n = (unsigned)((head - off + GPUIC_DEV_PROXY_ZCOPY_CHUNK - 1) /
                                GPUIC_DEV_PROXY_ZCOPY_CHUNK);

        n = n < GPUIC_DEV_PROXY_BATCH ? n : GPUIC_DEV_PROXY_BATCH;
        rc = gpuic_dev_proxy_reserve(t, n, &seq);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        for (unsigned i = 0; i < n; ++i) {
            size_t len = head - off < GPUIC_DEV_PROXY_ZCOPY_CHUNK ? head - off
                                                                  : GPUIC_DEV_PROXY_ZCOPY_CHUNK;

            h = gpuic_dev_proxy_hdr(t, seq + i);
            gpuic_wqe_build_rdma(wqe, &h, op, laddr + off, GPUIC_WQE_LKEY_DEVICE,
                                 (uint32_t)len, raddr + off, t->key);
            gpuic_dev_proxy_trace_open(q, seq + i, op, len, t0);
            gpuic_dev_proxy_write(q, seq + i, wqe, 1);
            off += len;
        }
        gpuic_dev_proxy_trace_published(q, seq, n, 1, gpuic_dev_proxy_trace_now());
        end = seq + n;
    }
    if (signal) {
        rc = gpuic_dev_proxy_reserve(t, 2, &seq);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        h = gpuic_dev_proxy_hdr(t, seq);
        gpuic_wqe_build_put_signal(wqe, &h, laddr + head, GPUIC_WQE_LKEY_DEVICE,
                                   (uint32_t)(bytes - head), raddr + head, t->key, sig_raddr,
                                   t->key, sig_op, value);
        gpuic_dev_proxy_trace_open(q, seq, GPUIC_WQE_OP_PUT_SIGNAL, bytes - head, t0);
        gpuic_dev_proxy_write(q, seq, wqe, 2);
        gpuic_dev_proxy_trace_published(q, seq, 1, 2, gpuic_dev_proxy_trace_now());
        end = seq + 2;
    }
    return gpuic_dev_proxy_wait(t, end);
}

/* Puts @p bytes from @p origin to @p raddr; complete at the target after a proxy flush.  The
 * origin is read before the call returns. */
__device__ static inline int gpuic_dev_proxy_put(const MPIX_Device_target *t, const void *origin,
                                                 size_t bytes, uint64_t raddr)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    gpuic_wqe_t wqe;
    uint64_t seq, t0 = gpuic_dev_proxy_trace_now();
    int rc;

    if (bytes == 8 && t->mapped) {
        return gpuic_dev_proxy_put8(t, origin, raddr);
    }
    if (bytes <= GPUIC_WQE_MAX_INLINE) {
        unsigned nbb = gpuic_dev_proxy_inline_bb(bytes);
        gpuic_wqe_hdr_t h;
        uint64_t t_fenced;

        rc = gpuic_dev_proxy_reserve_warp(t, nbb, &seq);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        h = gpuic_dev_proxy_hdr(t, seq);
        gpuic_wqe_build_put_inline(&wqe, &h, origin, (uint32_t)bytes, raddr, t->key);
        gpuic_dev_proxy_trace_open(q, seq, GPUIC_WQE_OP_RDMA_WRITE, bytes, t0);
        t_fenced = gpuic_dev_proxy_trace_now(); /* nothing staged: no fence */
        gpuic_dev_proxy_write(q, seq, &wqe, nbb);
        gpuic_dev_proxy_trace_published(q, seq, 1, nbb, t_fenced);
        return MPI_SUCCESS;
    }
    if (gpuic_dev_proxy_zcopy_fits(t, origin, bytes)) {
        return gpuic_dev_proxy_zcopy(t, &wqe, GPUIC_WQE_OP_RDMA_WRITE, origin, bytes, raddr, 0, 0,
                                     0);
    }
    for (size_t off = 0; off < bytes;) {
        size_t chunk_max = q->stage_bytes, left = bytes - off, pos = off;
        unsigned n = (unsigned)((left + chunk_max - 1) / chunk_max);
        uint64_t t_fenced;

        n = n < GPUIC_DEV_PROXY_BATCH ? n : GPUIC_DEV_PROXY_BATCH;
        rc = gpuic_dev_proxy_reserve(t, n, &seq);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        for (unsigned i = 0; i < n; ++i) {
            size_t len = bytes - pos < chunk_max ? bytes - pos : chunk_max;
            uint64_t host;

            gpuic_dev_copy(gpuic_dev_proxy_stage(q, seq + i, &host), (const char *)origin + pos,
                           len, 0, 1);
            gpuic_dev_proxy_trace_open(q, seq + i, GPUIC_WQE_OP_RDMA_WRITE, len, t0);
            pos += len;
        }
        gpuic_dev_fence_stage_to_proxy();
        t_fenced = gpuic_dev_proxy_trace_now();
        for (unsigned i = 0; i < n; ++i) {
            size_t len = bytes - off < chunk_max ? bytes - off : chunk_max;
            gpuic_wqe_hdr_t h = gpuic_dev_proxy_hdr(t, seq + i);
            uint64_t host;

            gpuic_dev_proxy_stage(q, seq + i, &host);
            gpuic_wqe_build_put(&wqe, &h, host, 0, (uint32_t)len, raddr + off, t->key);
            gpuic_dev_proxy_write(q, seq + i, &wqe, 1);
            off += len;
        }
        gpuic_dev_proxy_trace_published(q, seq, n, 1, t_fenced);
    }
    return MPI_SUCCESS;
}

/*
 * A get of the 8-byte word at @p raddr on the proxy path (any alignment: the proxy reads it
 * into the entry's staging area): the word comes back in *word, read into a register and
 * acknowledged before the caller stores it (gpuic_dev_proxy_ack() says why in this order).
 */
__device__ static inline int gpuic_dev_proxy_get_word(const MPIX_Device_target *t, uint64_t raddr,
                                                      uint64_t *word)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    gpuic_wqe_t wqe;
    gpuic_wqe_hdr_t h;
    uint64_t seq, host, t_fenced, t0 = gpuic_dev_proxy_trace_now();
    int rc = gpuic_dev_proxy_reserve(t, 1, &seq);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    gpuic_dev_proxy_trace_open(q, seq, GPUIC_WQE_OP_RDMA_READ, sizeof(uint64_t), t0);
    t_fenced = gpuic_dev_proxy_trace_now(); /* nothing staged: no fence */
    h = gpuic_dev_proxy_hdr(t, seq);
    gpuic_dev_proxy_stage(q, seq, &host);
    gpuic_wqe_build_get(&wqe, &h, host, 0, (uint32_t)sizeof(uint64_t), raddr, t->key);
    gpuic_dev_proxy_write(q, seq, &wqe, 1);
    gpuic_dev_proxy_trace_published(q, seq, 1, 1, t_fenced);
    rc = gpuic_dev_proxy_wait(t, seq + 1);
    if (rc == MPI_SUCCESS) {
        *word = *(const volatile uint64_t *)gpuic_dev_proxy_stage(q, seq, &host);
    }
    gpuic_dev_proxy_ack(q, seq, 1); /* read, or given up on */
    return rc;
}

/* Gets @p bytes from @p raddr into @p origin; complete on return. */
__device__ static inline int gpuic_dev_proxy_get(const MPIX_Device_target *t, void *origin,
                                                 size_t bytes, uint64_t raddr)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    gpuic_wqe_t wqe;
    uint64_t seq, t0 = gpuic_dev_proxy_trace_now();
    int rc;

    if (bytes == sizeof(uint64_t)) {
        uint64_t v;

        rc = gpuic_dev_proxy_get_word(t, raddr, &v);
        if (rc == MPI_SUCCESS) {
            gpuic_dev_store_word(origin, v);
        }
        return rc;
    }
    if (gpuic_dev_proxy_zcopy_fits(t, origin, bytes)) {
        return gpuic_dev_proxy_zcopy(t, &wqe, GPUIC_WQE_OP_RDMA_READ, origin, bytes, raddr, 0, 0,
                                     0);
    }
    for (size_t off = 0; off < bytes;) {
        size_t chunk_max = q->stage_bytes, left = bytes - off, pos = off;
        unsigned n = (unsigned)((left + chunk_max - 1) / chunk_max);
        uint64_t t_fenced;

        n = n < GPUIC_DEV_PROXY_BATCH ? n : GPUIC_DEV_PROXY_BATCH;
        rc = gpuic_dev_proxy_reserve(t, n, &seq);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        for (unsigned i = 0; i < n; ++i) {
            size_t len = bytes - pos < chunk_max ? bytes - pos : chunk_max;

            gpuic_dev_proxy_trace_open(q, seq + i, GPUIC_WQE_OP_RDMA_READ, len, t0);
            pos += len;
        }
        t_fenced = gpuic_dev_proxy_trace_now(); /* nothing staged: no fence */
        pos = off;
        for (unsigned i = 0; i < n; ++i) {
            size_t len = bytes - pos < chunk_max ? bytes - pos : chunk_max;
            gpuic_wqe_hdr_t h = gpuic_dev_proxy_hdr(t, seq + i);
            uint64_t host;

            gpuic_dev_proxy_stage(q, seq + i, &host);
            gpuic_wqe_build_get(&wqe, &h, host, 0, (uint32_t)len, raddr + pos, t->key);
            gpuic_dev_proxy_write(q, seq + i, &wqe, 1);
            pos += len;
        }
        gpuic_dev_proxy_trace_published(q, seq, n, 1, t_fenced);
        rc = gpuic_dev_proxy_wait(t, seq + n);
        if (rc != MPI_SUCCESS) {
            gpuic_dev_proxy_ack(q, seq, n); /* given up on */
            return rc;
        }
        for (unsigned i = 0; i < n; ++i) {
            size_t len = bytes - off < chunk_max ? bytes - off : chunk_max;
            uint64_t host;

            gpuic_dev_copy((char *)origin + off, gpuic_dev_proxy_stage(q, seq + i, &host), len,
                           0, 1);
            off += len;
        }
        gpuic_dev_proxy_ack(q, seq, n); /* read */
    }
    return MPI_SUCCESS;
}

/* One 8-byte atomic (GPUIC_WQE_OP_ATOMIC_FA or _CS) at @p raddr; the old value to *old. */
__device__ static inline int gpuic_dev_proxy_atomic(const MPIX_Device_target *t, uint8_t opcode,
                                                    uint64_t swap_add, uint64_t compare,
                                                    uint64_t raddr, uint64_t *old)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    gpuic_wqe_t wqe;
    gpuic_wqe_hdr_t h;
    uint64_t seq, host;
    const char *stage;
    uint64_t t0 = gpuic_dev_proxy_trace_now(), t_fenced;
    int rc = gpuic_dev_proxy_reserve(t, 1, &seq);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    h = gpuic_dev_proxy_hdr(t, seq);
    stage = gpuic_dev_proxy_stage(q, seq, &host);
    gpuic_wqe_build_atomic(&wqe, &h, opcode, swap_add, compare, host, 0, raddr, t->key);
    gpuic_dev_proxy_trace_open(q, seq, opcode, 8, t0);
    t_fenced = gpuic_dev_proxy_trace_now(); /* nothing staged: no fence */
    gpuic_dev_proxy_write(q, seq, &wqe, 1);
    gpuic_dev_proxy_trace_published(q, seq, 1, 1, t_fenced);
    rc = gpuic_dev_proxy_wait(t, seq + 1);
    if (rc == MPI_SUCCESS) {
        /* the proxy writes the old value in host byte order; acknowledged before the store
         * to *old (gpuic_dev_proxy_ack()) */
        uint64_t v = *(const volatile uint64_t *)stage;

        gpuic_dev_proxy_ack(q, seq, 1);
        *old = v;
        return MPI_SUCCESS;
    }
    gpuic_dev_proxy_ack(q, seq, 1); /* given up on */
    return rc;
}

/* Put-with-signal through the proxy: the payload, then (once it is complete at the target)
 * the signal update, executed by the proxy in that order. */
__device__ static inline int gpuic_dev_proxy_put_signal(const MPIX_Device_target *t,
                                                        const void *origin, size_t bytes,
                                                        uint64_t raddr, uint64_t sig_raddr,
                                                        uint64_t value, uint8_t sig_op)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    size_t head = 0, last;
    gpuic_wqe_t wqe;
    gpuic_wqe_hdr_t h;
    uint64_t seq, host, t0 = gpuic_dev_proxy_trace_now(), t_fenced;
    char *stage;
    int rc;

    if (gpuic_dev_proxy_zcopy_fits(t, origin, bytes)) {
        return gpuic_dev_proxy_zcopy(t, &wqe, GPUIC_WQE_OP_PUT_SIGNAL, origin, bytes, raddr,
                                     sig_raddr, value, sig_op);
    }
    /* everything but the last staging area's worth goes as plain puts first */
    if (bytes > q->stage_bytes) {
        head = bytes - bytes % q->stage_bytes;
        if (head == bytes) {
            head -= q->stage_bytes;
        }
        rc = gpuic_dev_proxy_put(t, origin, head, raddr);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    last = bytes - head;
    rc = gpuic_dev_proxy_reserve(t, 2, &seq);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    h = gpuic_dev_proxy_hdr(t, seq);
    stage = gpuic_dev_proxy_stage(q, seq, &host);
    gpuic_dev_copy(stage, (const char *)origin + head, last, 0, 1);
    gpuic_wqe_build_put_signal(&wqe, &h, host, 0, (uint32_t)last, raddr + head, t->key,
                               sig_raddr, t->key, sig_op, value);
    gpuic_dev_proxy_trace_open(q, seq, GPUIC_WQE_OP_PUT_SIGNAL, last, t0);
    gpuic_dev_fence_stage_to_proxy();
    t_fenced = gpuic_dev_proxy_trace_now();
    gpuic_dev_proxy_write(q, seq, &wqe, 2);
    gpuic_dev_proxy_trace_published(q, seq, 1, 2, t_fenced);
    return MPI_SUCCESS;
}

/* Waits until everything reserved on the queue so far has completed
 * (gpuic_dev_proxy_wait_until()). */
__device__ static inline int gpuic_dev_proxy_flush(const MPIX_Device_target *t)
{
    return gpuic_dev_proxy_wait_until(t, 0, true);
}

/* The proxy's accumulate op and type codes for a device op and type; false where the proxy
 * has no such operation (the caller then uses compare-and-swap loops). */
__device__ static inline bool gpuic_dev_proxy_acc_codes(MPIX_Device_op op, MPIX_Device_type type,
                                                        uint8_t *pop, uint8_t *ptype)
{
    switch (op) {
    case MPIX_DEVICE_SUM:     *pop = GPUIC_ACC_SUM; break;
    case MPIX_DEVICE_MIN:     *pop = GPUIC_ACC_MIN; break;
    case MPIX_DEVICE_MAX:     *pop = GPUIC_ACC_MAX; break;
    case MPIX_DEVICE_BAND:    *pop = GPUIC_ACC_BAND; break;
    case MPIX_DEVICE_BOR:     *pop = GPUIC_ACC_BOR; break;
    case MPIX_DEVICE_BXOR:    *pop = GPUIC_ACC_BXOR; break;
    case MPIX_DEVICE_REPLACE: *pop = GPUIC_ACC_REPLACE; break;
    default:                  return false;
    }
    switch (type) {
    case MPIX_DEVICE_INT32:  *ptype = GPUIC_ACC_INT32; break;
    case MPIX_DEVICE_UINT32: *ptype = GPUIC_ACC_UINT32; break;
    case MPIX_DEVICE_INT64:  *ptype = GPUIC_ACC_INT64; break;
    case MPIX_DEVICE_UINT64: *ptype = GPUIC_ACC_UINT64; break;
    case MPIX_DEVICE_FLOAT:  *ptype = GPUIC_ACC_FLOAT; break;
    case MPIX_DEVICE_DOUBLE: *ptype = GPUIC_ACC_DOUBLE; break;
    default:                 return false;
    }
    return true;
}

/* Non-fetching accumulate of @p count elements through accumulate entries (the proxy updates
 * each element atomically); complete at the target after a proxy flush. */
__device__ static inline int gpuic_dev_proxy_accumulate(const MPIX_Device_target *t,
                                                        const void *origin, int count,
                                                        size_t esize, uint8_t op, uint8_t type,
                                                        uint64_t raddr)
{
    MPIX_Gpuic_device_queue *q = t->queue;
    size_t per = q->stage_bytes / esize;
    gpuic_wqe_t wqe;
    uint64_t seq, host;
    int rc;

    for (size_t done = 0; done < (size_t)count;) {
        size_t n = (size_t)count - done < per ? (size_t)count - done : per;
        gpuic_wqe_hdr_t h;
        char *stage;

        rc = gpuic_dev_proxy_reserve(t, 1, &seq);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        h = gpuic_dev_proxy_hdr(t, seq);
        stage = gpuic_dev_proxy_stage(q, seq, &host);
        gpuic_dev_copy(stage, (const char *)origin + done * esize, n * esize, 0, 1);
        gpuic_wqe_build_accumulate(&wqe, &h, op, type, (uint32_t)n, (uint32_t)esize, host, 0,
                                   raddr + done * esize, t->key);
        gpuic_dev_fence_stage_to_proxy();
        gpuic_dev_proxy_write(q, seq, &wqe, 1);
        done += n;
    }
    return MPI_SUCCESS;
}

/*
 * Fetch-and-op on one element of 4 or 8 bytes through proxy atomics: a compare-and-swap loop
 * on the aligned 8-byte word that holds it (atomic against every other proxy and UCX atomic
 * on the word).  MPI_ERR_UNSUPPORTED_OPERATION when that word reaches past the window.
 */
template <typename T, bool INTEGER>
__device__ static inline int gpuic_dev_proxy_fetch_op(const MPIX_Device_target *t, uint64_t raddr,
                                                      MPIX_Device_op op, T origin, T *old_out)
{
    uint64_t waddr = raddr & ~(uint64_t)7, base = (uint64_t)(uintptr_t)t->base;
    unsigned shift = (unsigned)(raddr - waddr) * 8;
    uint64_t cur, seen, next;
    T oldv, newv;
    int rc;

    if (waddr < base || waddr - base + 8 > t->size) {
        return gpuic_dev_fail(t->desc, MPI_ERR_UNSUPPORTED_OPERATION);
    }
    rc = gpuic_dev_proxy_atomic(t, GPUIC_WQE_OP_ATOMIC_FA, 0, 0, waddr, &cur);
    for (;;) {
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        if (sizeof(T) == 8) {
            memcpy(&oldv, &cur, 8);
        } else {
            uint32_t part = (uint32_t)(cur >> shift);
            memcpy(&oldv, &part, 4);
        }
        if (!gpuic_dev_combiner<T, INTEGER>::apply(op, origin, oldv, &newv)) {
            return gpuic_dev_fail(t->desc, MPI_ERR_ARG);
        }
        if (op == MPIX_DEVICE_NO_OP) {
            break;
        }
        if (sizeof(T) == 8) {
            memcpy(&next, &newv, 8);
        } else {
            uint32_t part;
            memcpy(&part, &newv, 4);
            next = (cur & ~((uint64_t)0xffffffffu << shift)) | ((uint64_t)part << shift);
        }
        rc = gpuic_dev_proxy_atomic(t, GPUIC_WQE_OP_ATOMIC_CS, next, cur, waddr, &seen);
        if (rc == MPI_SUCCESS && seen == cur) {
            break;
        }
        cur = seen;
    }
    if (old_out != NULL) {
        *old_out = oldv;
    }
    return MPI_SUCCESS;
}

/* gpuic_dev_proxy_fetch_op on element @p i, by type. */
__device__ static inline int gpuic_dev_proxy_fetch_op_at(const MPIX_Device_target *t,
                                                         uint64_t raddr, MPIX_Device_type type,
                                                         MPIX_Device_op op, const void *origin,
                                                         void *result, int i)
{
    switch (type) {
    case MPIX_DEVICE_INT32:
        return gpuic_dev_proxy_fetch_op<int32_t, true>(
            t, raddr + 4 * i, op, origin ? ((const int32_t *)origin)[i] : 0,
            result ? (int32_t *)result + i : NULL);
    case MPIX_DEVICE_UINT32:
        return gpuic_dev_proxy_fetch_op<uint32_t, true>(
            t, raddr + 4 * i, op, origin ? ((const uint32_t *)origin)[i] : 0,
            result ? (uint32_t *)result + i : NULL);
    case MPIX_DEVICE_INT64:
        return gpuic_dev_proxy_fetch_op<int64_t, true>(
            t, raddr + 8 * i, op, origin ? ((const int64_t *)origin)[i] : 0,
            result ? (int64_t *)result + i : NULL);
    case MPIX_DEVICE_UINT64:
        return gpuic_dev_proxy_fetch_op<uint64_t, true>(
            t, raddr + 8 * i, op, origin ? ((const uint64_t *)origin)[i] : 0,
            result ? (uint64_t *)result + i : NULL);
    case MPIX_DEVICE_FLOAT:
        return gpuic_dev_proxy_fetch_op<float, false>(
            t, raddr + 4 * i, op, origin ? ((const float *)origin)[i] : 0.0f,
            result ? (float *)result + i : NULL);
    case MPIX_DEVICE_DOUBLE:
        return gpuic_dev_proxy_fetch_op<double, false>(
            t, raddr + 8 * i, op, origin ? ((const double *)origin)[i] : 0.0,
            result ? (double *)result + i : NULL);
    }
    return gpuic_dev_fail(t->desc, MPI_ERR_ARG);
}

/*
 * Accumulate through the proxy: one accumulate entry per staging area where the proxy has the
 * operation, otherwise a fetch-and-op loop per element (complete on return).
 */
__device__ static inline int gpuic_dev_proxy_acc(const MPIX_Device_target *t, const void *origin,
                                                 int count, MPIX_Device_type type,
                                                 MPIX_Device_op op, uint64_t raddr)
{
    uint8_t pop, ptype;

    if (op == MPIX_DEVICE_NO_OP || count == 0) {
        return MPI_SUCCESS;
    }
    if (gpuic_dev_proxy_acc_codes(op, type, &pop, &ptype)) {
        return gpuic_dev_proxy_accumulate(t, origin, count, gpuic_dev_type_size(type), pop,
                                          ptype, raddr);
    }
    for (int i = 0; i < count; ++i) {
        int rc = gpuic_dev_proxy_fetch_op_at(t, raddr, type, op, origin, NULL, i);

        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    return MPI_SUCCESS;
}

#endif /* MPIX_GPUIC_DEVICE_PROXY_CUH */
