/*
 * bench/baselines.h - the counters tally is measured against, written here
 * small and plainly, each the common shape of its kind:
 *
 *   ThreadLocalCount     a plain increment of a thread-local word: no
 *                        sharing and no atomics, the physical limit proxy
 *                        (it cannot be summed across threads).
 *   SharedAtomic         one std::atomic word, relaxed fetch_add.
 *   MutexCounter         a word under a std::mutex.
 *   UatomicCounter       liburcu's uatomic_add on one word.
 *   StripedCounter       in the style of Java's LongAdder: a base word
 *                        updated by CAS until a CAS fails, then a table of
 *                        cache-line cells picked by a per-thread probe that
 *                        is rehashed (xorshift) when a cell's CAS fails.
 *                        The table has the size LongAdder grows to (the
 *                        next power of two >= CPUs), allocated up front.
 *   ThreadCachedCounter  in the style of folly's ThreadCachedInt: each
 *                        thread owns a cached word (plain load + store, no
 *                        RMW) and moves it into a shared atomic once it
 *                        passes cache_size (default 1000); read_fast reads
 *                        the shared word, read_full adds every cache (not
 *                        exact while threads are adding).
 *   ThreadCachedExact    a per-thread front end with exact sums that loses
 *                        nothing at thread exit (see the class).
 *   LegacyNode           the lock-and-walk producer of the reference
 *                        consumer's legacy mode: an update takes each
 *                        ancestor's mutex in turn and applies the classic
 *                        lru_note_cost step there (add, halve once when
 *                        anon + file > lrusize / 4).
 */
#ifndef TALLY_BENCH_BASELINES_H
#define TALLY_BENCH_BASELINES_H

#include <benchmark/benchmark.h>
#include <urcu/uatomic.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tb {

constexpr size_t kLine = 128;

struct ThreadLocalCount {
	static uint64_t &word()
	{
		static thread_local uint64_t w;
		return w;
	}
	static void add(uint64_t d)
	{
		word() += d;
		benchmark::ClobberMemory(); /* the store must happen every time */
	}
};

struct SharedAtomic {
	alignas(kLine) std::atomic<uint64_t> v{0};
	void add(uint64_t d) { v.fetch_add(d, std::memory_order_relaxed); }
	uint64_t read() const { return v.load(std::memory_order_relaxed); }
};

struct MutexCounter {
	alignas(kLine) std::mutex m;
	uint64_t v = 0;
	void add(uint64_t d)
	{
		std::lock_guard<std::mutex> g(m);
		v += d;
	}
	uint64_t read()
	{
		std::lock_guard<std::mutex> g(m);
		return v;
	}
};

struct UatomicCounter {
	alignas(kLine) unsigned long v = 0;
	void add(unsigned long d) { uatomic_add(&v, d); }
	unsigned long read() { return uatomic_read(&v); }
};

inline unsigned next_pow2(unsigned n)
{
	unsigned p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

class StripedCounter {
	struct alignas(kLine) Cell {
		std::atomic<int64_t> v{0};
	};
	alignas(kLine) std::atomic<int64_t> base_{0};
	std::atomic<bool> contended_{false};
	std::unique_ptr<Cell[]> cells_;
	unsigned mask_;

	/* A per-thread probe, like ThreadLocalRandom's: seeds drawn from a
	 * shared sequence (golden-ratio steps, then mixed), nonzero. Seeding
	 * from the thread id with the low bit forced on, as this baseline did
	 * before, started every thread on cell 1 of a 2-cell table (2 CPUs),
	 * and the main thread (benchmark thread 0) kept its rehashed probe
	 * from one run to the next, so whether two threads shared a cell
	 * depended on the runs before. */
	static uint32_t &probe()
	{
		static std::atomic<uint64_t> seeder{0};
		static thread_local uint32_t h;
		if (!h) {
			uint64_t z = seeder.fetch_add(0x9e3779b97f4a7c15ull, std::memory_order_relaxed);
			z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdull;
			z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53ull;
			h = (uint32_t)(z ^ (z >> 33));
			if (!h)
				h = 1;
		}
		return h;
	}

public:
	explicit StripedCounter(unsigned ncpus)
	{
		unsigned n = next_pow2(ncpus ? ncpus : 1);
		cells_.reset(new Cell[n]);
		mask_ = n - 1;
	}
	void add(int64_t d)
	{
		if (!contended_.load(std::memory_order_relaxed)) {
			int64_t b = base_.load(std::memory_order_relaxed);
			if (base_.compare_exchange_weak(b, b + d, std::memory_order_relaxed))
				return;
			contended_.store(true, std::memory_order_relaxed);
		}
		uint32_t &h = probe();
		for (;;) {
			Cell &c = cells_[h & mask_];
			int64_t v = c.v.load(std::memory_order_relaxed);
			if (c.v.compare_exchange_weak(v, v + d, std::memory_order_relaxed))
				return;
			h ^= h << 13;
			h ^= h >> 17;
			h ^= h << 5;
		}
	}
	int64_t sum() const
	{
		int64_t s = base_.load(std::memory_order_relaxed);
		for (unsigned i = 0; i <= mask_; i++)
			s += cells_[i].v.load(std::memory_order_relaxed);
		return s;
	}
};

/* Small per-thread ids, reused after a thread exits (benchmark threads
 * come and go every run), for ThreadCachedCounter's per-thread caches. */
class ThreadIds {
	std::mutex m_;
	std::vector<bool> used_;

public:
	static ThreadIds &get()
	{
		static ThreadIds ids;
		return ids;
	}
	unsigned take()
	{
		std::lock_guard<std::mutex> g(m_);
		for (unsigned i = 0; i < used_.size(); i++)
			if (!used_[i]) {
				used_[i] = true;
				return i;
			}
		used_.push_back(true);
		return (unsigned)used_.size() - 1;
	}
	void give(unsigned id)
	{
		std::lock_guard<std::mutex> g(m_);
		used_[id] = false;
	}
	unsigned high() /* ids handed out so far */
	{
		std::lock_guard<std::mutex> g(m_);
		return (unsigned)used_.size();
	}
	struct Holder {
		unsigned id;
		Holder() : id(ThreadIds::get().take()) {}
		~Holder() { ThreadIds::get().give(id); }
	};
	static unsigned mine()
	{
		static thread_local Holder h;
		return h.id;
	}
};

class ThreadCachedCounter {
	static constexpr unsigned kMaxThreads = 1024;
	struct alignas(kLine) Cache {
		std::atomic<int64_t> v{0}; /* written by its owner thread only */
	};
	alignas(kLine) std::atomic<int64_t> target_{0};
	int64_t cache_size_;
	std::unique_ptr<Cache[]> caches_;

public:
	explicit ThreadCachedCounter(int64_t cache_size = 1000)
		: cache_size_(cache_size), caches_(new Cache[kMaxThreads])
	{
	}
	void add(int64_t d)
	{
		Cache &c = caches_[ThreadIds::mine() % kMaxThreads];
		int64_t nv = c.v.load(std::memory_order_relaxed) + d;
		if (nv > cache_size_ || nv < -cache_size_) {
			target_.fetch_add(nv, std::memory_order_relaxed);
			nv = 0;
		}
		c.v.store(nv, std::memory_order_relaxed);
	}
	int64_t read_fast() const { return target_.load(std::memory_order_relaxed); }
	int64_t read_full() const
	{
		int64_t s = target_.load(std::memory_order_relaxed);
		unsigned n = ThreadIds::get().high();
		for (unsigned i = 0; i < n && i < kMaxThreads; i++)
			s += caches_[i].v.load(std::memory_order_relaxed);
		return s;
	}
};

/*
 * ThreadCachedExact - a per-thread front end with exact sums and nothing
 * lost at thread exit, to size what such a front end to tally_counter
 * would cost and give. Each thread owns a slot (ThreadIds: reused, never
 * freed, after its thread exits) with a never-reset word w, written by
 * its owner only (relaxed load + store: no RMW), and a base: every
 * cache_size the owner moves w - base into the shared target (one atomic
 * add) and advances base. sum() adds every slot's w: exact whatever the
 * threads do, and a thread that exits leaves its w in the slot, which the
 * next thread to take the slot keeps adding to (the hand-over goes through
 * ThreadIds' mutex). read_fast() is the target: it lags by at most
 * cache_size per slot ever used.
 */
class ThreadCachedExact {
	static constexpr unsigned kMaxThreads = 1024;
	struct alignas(kLine) Slot {
		std::atomic<uint64_t> w{0}; /* written by the owner only */
		uint64_t base = 0;          /* owner only */
	};
	alignas(kLine) std::atomic<uint64_t> target_{0};
	uint64_t cache_size_;
	std::unique_ptr<Slot[]> slots_;

public:
	explicit ThreadCachedExact(uint64_t cache_size = 1000)
		: cache_size_(cache_size), slots_(new Slot[kMaxThreads])
	{
	}
	void add(uint64_t d)
	{
		Slot &s = slots_[ThreadIds::mine() % kMaxThreads];
		uint64_t w = s.w.load(std::memory_order_relaxed) + d;
		s.w.store(w, std::memory_order_relaxed);
		int64_t local = (int64_t)(w - s.base);
		if (local >= (int64_t)cache_size_ || local <= -(int64_t)cache_size_) {
			target_.fetch_add(w - s.base, std::memory_order_relaxed);
			s.base = w;
		}
	}
	uint64_t read_fast() const { return target_.load(std::memory_order_relaxed); }
	uint64_t sum() const
	{
		uint64_t t = 0;
		unsigned n = ThreadIds::get().high();
		for (unsigned i = 0; i < n && i < kMaxThreads; i++)
			t += slots_[i].w.load(std::memory_order_relaxed);
		return t;
	}
};

/* The legacy producer: a tree of nodes, each with its own lock. */
struct LegacyNode {
	std::mutex lock;
	uint64_t cost[2] = {0, 0};
	LegacyNode *parent = nullptr;
};

/* lru_note_cost() of the legacy model: lock, add, halve once, unlock, at
 * the node and every ancestor. */
inline void legacy_note_cost(LegacyNode *n, int side, uint64_t nr_io, uint64_t nr_rotated,
			     uint64_t lrusize)
{
	uint64_t cost = nr_io * 32 + nr_rotated;
	for (; n; n = n->parent) {
		std::lock_guard<std::mutex> g(n->lock);
		n->cost[side] += cost;
		if (n->cost[0] + n->cost[1] > lrusize / 4) {
			n->cost[0] /= 2;
			n->cost[1] /= 2;
		}
	}
}

} // namespace tb

#endif /* TALLY_BENCH_BASELINES_H */
