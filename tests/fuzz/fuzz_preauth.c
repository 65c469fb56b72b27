/* SPDX-License-Identifier: MIT */
/*
 * fuzz_preauth.c - libFuzzer target for the bounds against strangers: the pre-authentication
 * budget (gx_pa) driven by an op sequence against its invariants, and the token entropy
 * estimate on arbitrary bytes.
 *
 * Input: byte 0: max (1..32), byte 1: per_src (1..4); then ops of two bytes (op, arg):
 *   op % 4 == 0  admit + add entry arg % 64 from source arg / 64 (known when op & 4;
 *                full when op & 8), evicting what gx_pa_admit names
 *   op % 4 == 1  delete entry arg % 64 (authenticated or closed; twice is allowed)
 *   op % 4 == 2  token estimate of the next arg % 64 bytes
 *   op % 4 == 3  rate-limited log line (counted, printed at most a few times)
 * Invariants (abort on violation): n <= max after every add that was not forced by
 * "full"; per source at most per_src outside loopback; the FIFO holds exactly the entries
 * that are in, oldest first; an evicted entry is the oldest unknown one (or the oldest when
 * the newcomer is known); the estimate is within 0 .. 8 x length.
 */
#include "agent/pipeline/run_int.h"
#include "rdzv/gx/gx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NE 64

static const char *const srcs[4] = {"10.0.0.1", "10.0.0.2", "fd00::3", "127.0.0.1"};

static void check(const struct gx_pa *pa, const struct gx_pa_ent *e, const uint64_t *order)
{
	const struct gx_pa_ent *p, *prev = NULL;
	size_t n = 0, i, s;

	for (p = pa->oldest; p; prev = p, p = p->newer) {
		if (prev && order[prev - e] >= order[p - e])
			abort();
		if (!p->in)
			abort();
		n++;
	}
	if (n != pa->n || prev != pa->newest)
		abort();
	for (s = 0; s < 3; s++) {
		size_t c = 0;

		for (i = 0; i < NE; i++)
			c += e[i].in && strcmp(e[i].src, srcs[s]) == 0;
		if (c != gx_pa_count(pa, srcs[s]) || c > pa->per_src)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gx_pa_ent e[NE];
	static uint64_t order[NE];
	struct gx_rl rl = {.what = "fuzz"};
	struct gx_pa pa;
	uint64_t seq = 1;
	size_t i;
	int level = gx_log_get_level();

	if (size < 2)
		return 0;
	gx_log_set_level(GX_LOG_ERROR);
	memset(e, 0, sizeof(e));
	if (gx_pa_init(&pa, 1 + data[0] % 32, 1 + data[1] % 4) < 0)
		abort();
	for (i = 2; i + 1 < size; i += 2) {
		uint8_t op = data[i], arg = data[i + 1];
		struct gx_pa_ent *x = &e[arg % NE], *old = NULL, *want;
		int known = (op & 4) != 0, full = (op & 8) != 0, b;
		const char *src = srcs[arg / 64];

		switch (op % 4) {
		case 0:
			if (x->in)
				break;
			if (gx_pa_admit(&pa, src, known, full, &old) < 0)
				break;
			if (full || pa.n >= pa.max) {
				for (want = pa.oldest; want && want->known; want = want->newer)
					;
				if (!want && known)
					want = pa.oldest;
				if (old != want)
					abort();
			} else if (old) {
				abort();
			}
			if (old)
				gx_pa_del(&pa, old);
			gx_pa_add(&pa, x, src, known);
			order[x - e] = seq++;
			if (!full && pa.n > pa.max)
				abort();
			break;
		case 1:
			gx_pa_del(&pa, x);
			gx_pa_del(&pa, x);
			break;
		case 2: {
			size_t len = arg % 64;

			if (len > size - i - 2)
				len = size - i - 2;
			b = agent_token_bits(data + i + 2, len);
			if (b < 0 || (size_t)b > 8 * len)
				abort();
			break;
		}
		default:
			gx_rl_log(&rl, "fuzz event %u", arg);
			if (rl.n < rl.held)
				abort();
			break;
		}
		check(&pa, e, order);
	}
	gx_rl_final(&rl);
	gx_pa_free(&pa);
	gx_log_set_level(level);
	return 0;
}
