/*
 * shm_fuzz - the region reader of tally/shm.h (tally_shm_read_image(), the
 * code under tally_shm_snapshot()) fed corrupted regions: a real region's
 * image with random bytes flipped, header and directory fields set to
 * boundary values, histograms' blocks (layout, bucket count, bounds,
 * scale, bank word, big-record counts, carries) and chunks (bucket
 * halves, done counts, sums) overwritten, lengths cut or padded. Each
 * image is copied into a heap block of exactly its length, so under ASan
 * (the asan and w32 builds) a read one byte past it fails the run. Every
 * call must return 0 with well-formed values (a histogram's count the sum
 * of its buckets), or -EINVAL / -EPROTO with a reason.
 *
 *   shm_fuzz [RUNS [SEED]]          (TALLY_SHM_FUZZ_RUNS also sets RUNS)
 *
 * Built with -DTALLY_SHM_LIBFUZZER it is a libFuzzer target instead
 * (clang -fsanitize=fuzzer,address), whose inputs are whole images:
 *   clang -g -O1 -fsanitize=fuzzer,address -DTALLY_SHM_LIBFUZZER \
 *         -Iinclude tests/plain/shm_fuzz.c -o shm_fuzz_lf && ./shm_fuzz_lf
 */
#define _GNU_SOURCE
#include "harness.h"

#include <tally/shm/hist.h>

#include <stddef.h>

static unsigned long accepted, refused_inval, refused_proto;

/* Read the image at data (size bytes) from an exactly sized heap copy. */
static int one(const uint8_t *data, size_t size)
{
	struct tally_shm_snap s = {0};
	char why[TALLY_SHM_ERROR_MAX];
	unsigned char *buf = (unsigned char *)malloc(size ? size : 1);
	size_t i;
	int err;
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	why[0] = '\0';
	err = tally_shm_read_image(buf, size, &s, why, sizeof(why));
	if (err == 0) {
		accepted++;
		for (i = 0; i < s.n; i++) {
			size_t len = strlen(s.v[i].name);
			CHECK(len >= 1 && len <= TALLY_SHM_NAME_MAX, "name length %zu", len);
			CHECK(s.v[i].kind == TALLY_SHM_COUNTER || s.v[i].kind == TALLY_SHM_GAUGE ||
				      s.v[i].kind == TALLY_SHM_PROC_GAUGE ||
				      s.v[i].kind == TALLY_SHM_HIST,
			      "kind %u", s.v[i].kind);
			CHECK(tally__shm_name_ok(s.v[i].name) == len, "name '%s'", s.v[i].name);
			CHECK(!s.v[i].hist == (s.v[i].kind != TALLY_SHM_HIST), "hist of kind %u",
			      s.v[i].kind);
			if (s.v[i].hist) {
				const struct tally_hist_snap *h = s.v[i].hist;
				uint64_t c = 0;
				unsigned j;
				CHECK(h->nr_buckets >= 3 && h->nr_buckets <= TALLY_HIST_BUCKETS_MAX,
				      "%u buckets", h->nr_buckets);
				for (j = 0; j < h->nr_buckets; j++)
					c += h->counts[j];
				CHECK(c == h->count && s.v[i].raw == (tally_uword)c, "count");
				CHECK(s.v[i].scale > 0, "scale");
				(void)tally_hist_quantile(h, 0.5);
			}
		}
		CHECK(s.lim <= s.nr_slots, "lim %u of %u", s.lim, s.nr_slots);
		CHECK(s.procs_live <= s.procs, "live %u of %u", s.procs_live, s.procs);
	} else {
		refused_inval += err == -EINVAL;
		refused_proto += err == -EPROTO;
		CHECK(err == -EINVAL || err == -EPROTO || err == -ENOMEM, "error %d", err);
		CHECK(why[0] != '\0', "error %d without a reason", err);
	}
	tally_shm_snap_free(&s);
	free(buf);
	return 0;
}

#ifdef TALLY_SHM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size);
	if (harness_failures)
		abort();
	return 0;
}
#else

/* A real region's image: a few counters (two labelled), a gauge and a
 * per-process gauge (this process's row claimed), values written. */
static unsigned char *make_image(size_t *len)
{
	char dir[] = "/tmp/tally-shm-fuzz.XXXXXX", path[300];
	struct tally_shm_opts o = {0};
	struct tally_shm *r = NULL;
	struct tally_shm_counter c;
	char why[TALLY_SHM_ERROR_MAX];
	unsigned char *img = NULL;
	struct stat sb;
	int i, fd;
	if (!mkdtemp(dir))
		return NULL;
	snprintf(path, sizeof(path), "%s/region", dir);
	o.max_objects = 12;
	o.slot_bytes = 4096;
	o.max_procs = 4;
	o.shared_bytes = 4096;
	if (tally_shm_open(&r, path, &o, why, sizeof(why))) {
		fprintf(stderr, "shm_fuzz: %s\n", why);
		return NULL;
	}
	for (i = 0; i < 6; i++) {
		char nm[64];
		if (i < 2)
			snprintf(nm, sizeof(nm), "requests{method=\"m%d\",code=\"2\\\"0\"}", i);
		else
			snprintf(nm, sizeof(nm), i == 5 ? "gauge_%d" : "counter_%d", i);
		if (i == 5 ? tally_shm_gauge(r, nm, &c) : tally_shm_counter(r, nm, &c))
			return NULL;
		tally_shm_add(&c, i == 5 ? -3 : i * 1000 + 1);
	}
	{
		struct tally_shm_proc_gauge g;
		if (tally_shm_proc_gauge(r, "inflight", &g))
			return NULL;
		tally_shm_proc_add(&g, 4);
	}
	{
		/* two histograms: log-linear and explicit bounds */
		static const uint64_t b[] = {10, 100, 1000};
		struct tally_hist_opts ll = {0}, ex = {0};
		struct tally_shm_hist h1, h2;
		ll.lowest = 1;
		ll.highest = 100000;
		ll.precision = 2;
		ex.bounds = b;
		ex.nr_bounds = 3;
		if (tally_shm_hist(r, "lat{k=\"v\"}", &ll, 1e-9, &h1) ||
		    tally_shm_hist(r, "sizes", &ex, 0, &h2)) {
			fprintf(stderr, "shm_fuzz: %s\n", tally_shm_error(r));
			return NULL;
		}
		for (i = 0; i < 50; i++) {
			tally_shm_hist_record(&h1, i * 997);
			tally_shm_hist_record_n(&h2, i * 37, (uint64_t)i % 20);
		}
	}
	tally_shm_close(r);
	fd = open(path, O_RDONLY);
	if (fd >= 0 && !fstat(fd, &sb) && (img = (unsigned char *)malloc((size_t)sb.st_size)) &&
	    read(fd, img, (size_t)sb.st_size) == sb.st_size)
		*len = (size_t)sb.st_size;
	if (fd >= 0)
		close(fd);
	unlink(path);
	rmdir(dir);
	return img;
}

static const uint64_t interesting[] = {0,          1,          2,          3,
				       7,          8,          63,         64,
				       103,        104,        127,        128,
				       255,        256,        4095,       4096,
				       4097,       65535,      65536,      65537,
				       0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
				       1ull << 40, 1ull << 41, ~0ull,      ~0ull >> 1};

int main(int argc, char **argv)
{
	size_t len = 0, dir_off, shared_off, chunks[2] = {0, 0};
	unsigned char *img = make_image(&len), *work;
	struct harness_rng rng;
	unsigned long runs = 20000, seed = 1, run;
	const char *env = getenv("TALLY_SHM_FUZZ_RUNS");
	if (env)
		runs = strtoul(env, NULL, 10);
	if (argc > 1)
		runs = strtoul(argv[1], NULL, 10);
	if (argc > 2)
		seed = strtoul(argv[2], NULL, 10);
	if (!img) {
		fprintf(stderr, "shm_fuzz: no image\n");
		return 1;
	}
	work = (unsigned char *)malloc(len + 4096);
	if (!work)
		return 1;
	{
		struct tally__shm_header h;
		unsigned e, nh = 0;
		memcpy(&h, img, sizeof(h));
		dir_off = (size_t)h.dir_off;
		shared_off = (size_t)h.shared_off;
		for (e = 0; e < h.count && nh < 2; e++) { /* the histograms' chunks */
			struct tally__shm_entry en;
			memcpy(&en, img + dir_off + (size_t)e * sizeof(en), sizeof(en));
			if (en.kind == TALLY_SHM_HIST)
				chunks[nh++] = (size_t)(h.data_off + en.off);
		}
		if (nh != 2) {
			fprintf(stderr, "shm_fuzz: no histograms in the image\n");
			return 1;
		}
	}
	one(img, len); /* the untouched image reads */
	CHECK_EQ(accepted, 1);
	rng.s = seed;
	for (run = 0; run < runs; run++) {
		size_t n = len, k, m = 1 + harness_next(&rng) % 4;
		memcpy(work, img, len);
		for (k = 0; k < m; k++) {
			uint64_t x = harness_next(&rng), v = interesting[x % (sizeof(interesting) / 8)];
			size_t at;
			switch ((x >> 8) % 8) {
			case 0: /* a random byte anywhere in the metadata */
				at = (size_t)((x >> 16) % (dir_off + 8 * 256));
				work[at % len] ^= (unsigned char)(1u << ((x >> 40) % 8));
				break;
			case 1: /* a header field (4-byte aligned), 4 bytes */
				at = (size_t)((x >> 16) % 64) * 4;
				memcpy(work + at, &v, 4);
				break;
			case 2: /* a header field (8-byte aligned), 8 bytes */
				at = (size_t)((x >> 16) % 32) * 8;
				memcpy(work + at, &v, 8);
				break;
			case 3: /* a directory entry's field */
				at = dir_off + (size_t)((x >> 16) % 12) * 256 + (size_t)((x >> 24) % 8) * 4;
				memcpy(work + at, &v, (x >> 32) & 1 ? 8 : 4);
				break;
			case 4: /* cut */
				n = (size_t)((x >> 16) % (len + 1));
				break;
			case 5: /* a histogram block's field: descriptor, bank word,
				 * big-record counts, carries, bounds */
				at = shared_off + (size_t)((x >> 16) % 256) * 8;
				memcpy(work + at, &v, (x >> 32) & 1 ? 8 : 4);
				break;
			case 6: /* a histogram's chunk, CPU slot 0: done, sums, halves */
				at = chunks[(x >> 12) & 1] + (size_t)((x >> 16) % 64) * 4;
				memcpy(work + at, &v, 4);
				break;
			default: /* a name byte */
				at = dir_off + (size_t)((x >> 16) % 12) * 256 + 24 +
				     (size_t)((x >> 24) % (TALLY_SHM_NAME_MAX + 1));
				work[at] = (unsigned char)(x >> 40);
				break;
			}
		}
		one(work, n);
		if (harness_failures) {
			fprintf(stderr, "shm_fuzz: run %lu (seed %lu) failed\n", run, seed);
			break;
		}
	}
	printf("shm_fuzz: %lu runs: %lu read, %lu refused as corrupted, %lu as incompatible\n",
	       runs, accepted, refused_inval, refused_proto);
	CHECK(refused_inval > 0 && accepted > 1, "the mutations reached neither outcome");
	free(work);
	free(img);
	return harness_exit("shm_fuzz");
}
#endif
