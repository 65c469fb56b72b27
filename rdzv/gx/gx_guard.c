/* SPDX-License-Identifier: MIT */
/*
 * gx_guard.c - what a stranger without the token may cost a listening service
 * (issue 25): the pre-authentication budget (oldest first, counted per source
 * address, SipHash buckets under a random key so a stranger cannot aim at one
 * chain) and rate-limited warnings for the events anyone can cause.
 */
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t src_bucket(const struct gx_pa *pa, const char *src)
{
	unsigned char h[crypto_shorthash_BYTES];
	uint64_t v = 0;
	size_t i;

	crypto_shorthash(h, (const unsigned char *)src, strlen(src), pa->key);
	for (i = 0; i < sizeof(h); i++)
		v = v << 8 | h[i];
	return (uint32_t)(v % pa->nb);
}

int gx_pa_init(struct gx_pa *pa, size_t max, size_t per_src)
{
	memset(pa, 0, sizeof(*pa));
	if (max < 1 || per_src < 1 || sodium_init() < 0)
		return -EINVAL;
	pa->nb = 64;
	while (pa->nb < max / 4 && pa->nb < 16384)
		pa->nb *= 2;
	pa->b = calloc(pa->nb, sizeof(*pa->b));
	if (!pa->b)
		return -ENOMEM;
	pa->max = max;
	pa->per_src = per_src;
	randombytes_buf(pa->key, sizeof(pa->key));
	return 0;
}

void gx_pa_free(struct gx_pa *pa)
{
	free(pa->b);
	memset(pa, 0, sizeof(*pa));
}

size_t gx_pa_count(const struct gx_pa *pa, const char *src)
{
	const struct gx_pa_ent *e;
	size_t n = 0;

	if (!pa->b)
		return 0;
	for (e = pa->b[src_bucket(pa, src)]; e; e = e->bnext)
		n += strcmp(e->src, src) == 0;
	return n;
}

int gx_addr_is_loopback(const char *src)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, src, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, src, &a6) != 1)
		return 0;
	if (IN6_IS_ADDR_LOOPBACK(&a6))
		return 1;
	return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
}

int gx_pa_admit(struct gx_pa *pa, const char *src, int known, int full, struct gx_pa_ent **evict)
{
	struct gx_pa_ent *v;

	*evict = NULL;
	if (!pa->b)
		return -EINVAL;
	if (!gx_addr_is_loopback(src) && gx_pa_count(pa, src) >= pa->per_src)
		return -EBUSY;
	if (!full && pa->n < pa->max)
		return 0;
	for (v = pa->oldest; v && v->known; v = v->newer)
		;
	if (!v && known)
		v = pa->oldest;
	if (!v)
		return -EBUSY;
	*evict = v;
	return 0;
}

void gx_pa_add(struct gx_pa *pa, struct gx_pa_ent *e, const char *src, int known)
{
	if (!pa->b || e->in)
		return;
	gx_strlcpy(e->src, src, sizeof(e->src));
	e->known = known;
	e->bucket = src_bucket(pa, e->src);
	e->bnext = pa->b[e->bucket];
	if (e->bnext)
		e->bnext->bpp = &e->bnext;
	e->bpp = &pa->b[e->bucket];
	pa->b[e->bucket] = e;
	e->older = pa->newest;
	e->newer = NULL;
	if (pa->newest)
		pa->newest->newer = e;
	else
		pa->oldest = e;
	pa->newest = e;
	e->in = 1;
	pa->n++;
}

void gx_pa_del(struct gx_pa *pa, struct gx_pa_ent *e)
{
	if (!e->in)
		return;
	*e->bpp = e->bnext;
	if (e->bnext)
		e->bnext->bpp = e->bpp;
	if (e->older)
		e->older->newer = e->newer;
	else
		pa->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		pa->newest = e->older;
	e->older = e->newer = e->bnext = NULL;
	e->bpp = NULL;
	e->in = 0;
	pa->n--;
}

/* ---- rate-limited warnings ---- */
/* Warnings at the normal level; with -q (level warn or below) they go to debug: a stranger's
 * noise is not what -q keeps. */
static int rl_level(void)
{
	return gx_log_get_level() >= GX_LOG_INFO ? GX_LOG_WARN : GX_LOG_DEBUG;
}

static void rl_summary(struct gx_rl *rl, int64_t now)
{
	gx_log(rl_level(), "%s: %llu more in the last %d s (-v shows each)", rl->what,
	       (unsigned long long)rl->held, GX_RL_INTERVAL_MS / 1000);
	rl->held = 0;
	rl->next_ms = now + GX_RL_INTERVAL_MS;
}

void gx_rl_log(struct gx_rl *rl, const char *fmt, ...)
{
	int64_t now = gx_now_ms();
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (++rl->n <= GX_RL_FIRST) {
		gx_log(rl_level(), "%s%s", line,
		       rl->n == GX_RL_FIRST ? " (further ones: counted)" : "");
		rl->next_ms = now + GX_RL_INTERVAL_MS;
		return;
	}
	gx_debug("%s", line);
	rl->held++;
	if (now >= rl->next_ms)
		rl_summary(rl, now);
}

void gx_rl_flush(struct gx_rl *rl)
{
	int64_t now = gx_now_ms();

	if (rl->held && now >= rl->next_ms)
		rl_summary(rl, now);
}

void gx_rl_final(struct gx_rl *rl)
{
	if (rl->held)
		rl_summary(rl, gx_now_ms());
}
