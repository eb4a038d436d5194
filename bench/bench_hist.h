/*
 * bench/bench_hist.h - what bench_hist.c shares with bench_hist_hdr.c (the
 * HdrHistogram_c side, built only when its sources are given): the values
 * every record loop cycles through and the read side's data.
 */
#ifndef TALLY_BENCH_HIST_H
#define TALLY_BENCH_HIST_H

#include <stdint.h>

#define BENCH_HIST_UNROLL 8
#define BENCH_HIST_NVALS 1024
/* The read side: this many records of bench_hist_read_value(i). */
#define BENCH_HIST_READ_N 100000u

/* 1,024 latencies drawn once from an exponential distribution (mean
 * 50 us), made before main (bench_hist.c). */
extern int64_t bench_hist_vals[BENCH_HIST_NVALS];

/* The read side's i-th value: the latencies times 1..7 (up to a few ms). */
static inline int64_t bench_hist_read_value(uint64_t i)
{
	return bench_hist_vals[i & (BENCH_HIST_NVALS - 1)] * (int64_t)(1 + i % 7);
}

#endif
