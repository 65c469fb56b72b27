/* SPDX-License-Identifier: MIT */
/*
 * gx_guard.c - what a stranger without the token may cost a listening service
 * (connections, CPU, log lines): the pre-authentication budget (oldest first, counted per source
 * address and per IPv6 /64, SipHash buckets under a random key so a stranger cannot
 * aim at one chain) and rate-limited warnings for the events anyone can cause.
 */
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t key_bucket(const struct gx_pa *pa, const char *key)
{
	unsigned char h[crypto_shorthash_BYTES];
	uint64_t v = 0;
	size_t i;

	crypto_shorthash(h, (const unsigned char *)key, strlen(key), pa->key);
	for (i = 0; i < sizeof(h); i++)
		v = v << 8 | h[i];
	return (uint32_t)(v % pa->nb);
}

static int is_linklocal(const struct in6_addr *a)
{
	return a->s6_addr[0] == 0xfe && (a->s6_addr[1] & 0xc0) == 0x80;
}

void gx_pa_source(const char *src, char *out, size_t len)
{
	struct in6_addr a6;

	if (strchr(src, ':') && inet_pton(AF_INET6, src, &a6) == 1 && is_linklocal(&a6))
		gx_strlcpy(out, "fe80::/10", len);
	else
		gx_strlcpy(out, src, len);
}

void gx_pa_net(const char *src, char *out, size_t len)
{
	char txt[INET6_ADDRSTRLEN];
	struct in6_addr a6;

	out[0] = '\0';
	if (!strchr(src, ':') || inet_pton(AF_INET6, src, &a6) != 1 || is_linklocal(&a6) ||
	    IN6_IS_ADDR_V4MAPPED(&a6) || IN6_IS_ADDR_LOOPBACK(&a6))
		return;
	memset(a6.s6_addr + 8, 0, 8);
	if (inet_ntop(AF_INET6, &a6, txt, sizeof(txt)))
		snprintf(out, len, "%s/64", txt);
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
	pa->nb_b = calloc(pa->nb, sizeof(*pa->nb_b));
	if (!pa->b || !pa->nb_b) {
		gx_pa_free(pa);
		return -ENOMEM;
	}
	pa->max = max;
	pa->per_src = per_src;
	pa->per_net = per_src * GX_PA_NET_MULT;
	randombytes_buf(pa->key, sizeof(pa->key));
	return 0;
}

void gx_pa_free(struct gx_pa *pa)
{
	free(pa->b);
	free(pa->nb_b);
	memset(pa, 0, sizeof(*pa));
}

size_t gx_pa_count(const struct gx_pa *pa, const char *src)
{
	const struct gx_pa_ent *e;
	char key[sizeof(e->src)];
	size_t n = 0;

	if (!pa->b)
		return 0;
	gx_pa_source(src, key, sizeof(key));
	for (e = pa->b[key_bucket(pa, key)]; e; e = e->bnext)
		n += strcmp(e->src, key) == 0;
	return n;
}

size_t gx_pa_count_net(const struct gx_pa *pa, const char *src)
{
	const struct gx_pa_ent *e;
	char net[sizeof(e->net)];
	size_t n = 0;

	gx_pa_net(src, net, sizeof(net));
	if (!pa->nb_b || !net[0])
		return 0;
	for (e = pa->nb_b[key_bucket(pa, net)]; e; e = e->nnext)
		n += strcmp(e->net, net) == 0;
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

static int refuse(struct gx_pa *pa, enum gx_pa_refusal why)
{
	pa->refused = why;
	return -EBUSY;
}

int gx_pa_admit(struct gx_pa *pa, const char *src, int known, int full, struct gx_pa_ent **evict)
{
	struct gx_pa_ent *v;

	*evict = NULL;
	pa->refused = GX_PA_OK;
	if (!pa->b)
		return -EINVAL;
	if (!gx_addr_is_loopback(src) && gx_pa_count(pa, src) >= pa->per_src)
		return refuse(pa, GX_PA_PER_SRC);
	if (!known && gx_pa_count_net(pa, src) >= pa->per_net)
		return refuse(pa, GX_PA_PER_NET);
	if (!full && pa->n < pa->max)
		return 0;
	for (v = pa->oldest; v && v->known; v = v->newer)
		;
	if (!v && known)
		v = pa->oldest;
	if (!v)
		return refuse(pa, GX_PA_NO_ROOM);
	*evict = v;
	return 0;
}

const char *gx_pa_why(const struct gx_pa *pa, const char *src, char *buf, size_t len)
{
	char net[46];

	switch (pa->refused) {
	case GX_PA_PER_SRC:
		snprintf(buf, len, "%zu unauthenticated ones from there (the limit per source)",
			 gx_pa_count(pa, src));
		break;
	case GX_PA_PER_NET:
		gx_pa_net(src, net, sizeof(net));
		snprintf(buf, len, "%zu unauthenticated ones from %s (the limit per /64)",
			 gx_pa_count_net(pa, src), net);
		break;
	case GX_PA_NO_ROOM:
		snprintf(buf, len,
			 "the pre-authentication budget is full (%zu unauthenticated, none that a "
			 "newcomer from there may close)",
			 pa->n);
		break;
	case GX_PA_OK:
		snprintf(buf, len, "admitted");
		break;
	}
	return buf;
}

void gx_pa_add(struct gx_pa *pa, struct gx_pa_ent *e, const char *src, int known)
{
	if (!pa->b || e->in)
		return;
	gx_pa_source(src, e->src, sizeof(e->src));
	e->known = known;
	e->bucket = key_bucket(pa, e->src);
	e->bnext = pa->b[e->bucket];
	if (e->bnext)
		e->bnext->bpp = &e->bnext;
	e->bpp = &pa->b[e->bucket];
	pa->b[e->bucket] = e;
	e->net[0] = '\0';
	e->npp = NULL;
	e->nnext = NULL;
	if (!known)
		gx_pa_net(src, e->net, sizeof(e->net));
	if (e->net[0]) {
		e->nbucket = key_bucket(pa, e->net);
		e->nnext = pa->nb_b[e->nbucket];
		if (e->nnext)
			e->nnext->npp = &e->nnext;
		e->npp = &pa->nb_b[e->nbucket];
		pa->nb_b[e->nbucket] = e;
	}
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
	if (e->npp) {
		*e->npp = e->nnext;
		if (e->nnext)
			e->nnext->npp = e->npp;
	}
	if (e->older)
		e->older->newer = e->newer;
	else
		pa->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		pa->newest = e->older;
	e->older = e->newer = e->bnext = e->nnext = NULL;
	e->bpp = e->npp = NULL;
	e->in = 0;
	pa->n--;
}

/* ---- a set of addresses ---- */
static uint32_t aset_bucket(const struct gx_aset *s, const char *a)
{
	unsigned char h[crypto_shorthash_BYTES];
	uint64_t v = 0;
	size_t i;

	crypto_shorthash(h, (const unsigned char *)a, strlen(a), s->key);
	for (i = 0; i < sizeof(h); i++)
		v = v << 8 | h[i];
	return (uint32_t)(v % s->nb);
}

int gx_aset_init(struct gx_aset *s, size_t cap)
{
	memset(s, 0, sizeof(*s));
	if (cap < 1 || sodium_init() < 0)
		return -EINVAL;
	s->nb = 64;
	while (s->nb < cap && s->nb < 65536)
		s->nb *= 2;
	s->b = calloc(s->nb, sizeof(*s->b));
	if (!s->b)
		return -ENOMEM;
	s->cap = cap;
	randombytes_buf(s->key, sizeof(s->key));
	return 0;
}

void gx_aset_free(struct gx_aset *s)
{
	size_t i;

	for (i = 0; s->b && i < s->nb; i++)
		while (s->b[i]) {
			struct gx_aset_ent *e = s->b[i];

			s->b[i] = e->next;
			free(e);
		}
	free(s->b);
	memset(s, 0, sizeof(*s));
}

int gx_aset_has(const struct gx_aset *s, const char *a)
{
	const struct gx_aset_ent *e;

	if (!s->b || !a[0])
		return 0;
	for (e = s->b[aset_bucket(s, a)]; e; e = e->next)
		if (strcmp(e->a, a) == 0)
			return 1;
	return 0;
}

int gx_aset_add(struct gx_aset *s, const char *a)
{
	struct gx_aset_ent *e;
	uint32_t k;

	if (!s->b || !a[0] || gx_aset_has(s, a))
		return 0;
	if (s->n >= s->cap || strlen(a) >= sizeof(e->a))
		return -ENOSPC;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	gx_strlcpy(e->a, a, sizeof(e->a));
	k = aset_bucket(s, a);
	e->next = s->b[k];
	s->b[k] = e;
	s->n++;
	return 0;
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
