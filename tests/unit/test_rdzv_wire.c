/* SPDX-License-Identifier: MIT */
/* test_rdzv_wire.c - framing and TLV codec: round trips, every truncation,
 * oversize, bad magic / version, unknown TLVs, peer validation. */
#include "rdzv/rdzv_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void sample_peer(struct rdzv_peer *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "job-worker-7.job.ns.svc");
	p->index = 7;
	p->incarnation = 0x0102030405060708ull;
	snprintf(p->iface, sizeof(p->iface), "net1");
	snprintf(p->addr4, sizeof(p->addr4), "192.168.2.7");
	snprintf(p->addr6, sizeof(p->addr6), "fd00::7");
	snprintf(p->rdma_dev, sizeof(p->rdma_dev), "mlx5_3");
	p->rdma_port = 1;
	p->gid_index = -1;
	p->link_layer = 2;
	p->slots = 8;
	p->nd_err = GX_ENOSECONDARY;
	snprintf(p->nd_why, sizeof(p->nd_why), "net1 has no address");
	p->flags = RDZV_PF_FULL_TABLE;
	snprintf(p->primary, sizeof(p->primary), "10.244.1.7");
	p->mtu = 9000;
	snprintf(p->rails, sizeof(p->rails), "mlx5_0:1/net1/192.168.2.7,mlx5_3:1/net4/fd00:4::7");
}

static void test_header_round_trip(void **state)
{
	unsigned char h[RDZV_HDR_LEN];
	struct rdzv_hdr d;

	(void)state;
	rdzv_hdr_encode(h, RDZV_JOIN, 1234);
	assert_memory_equal(h, "GXB1", 4);
	assert_int_equal(rdzv_hdr_decode(h, 0, &d), 0);
	assert_int_equal(d.type, RDZV_JOIN);
	assert_int_equal(d.len, 1234);
	assert_int_equal(d.vmaj, RDZV_VMAJOR);
	assert_int_equal(d.vmin, RDZV_VMINOR);
}

static void test_header_bad(void **state)
{
	unsigned char h[RDZV_HDR_LEN];
	struct rdzv_hdr d;

	(void)state;
	rdzv_hdr_encode(h, RDZV_JOIN, 10);
	h[0] ^= 1;
	assert_int_equal(rdzv_hdr_decode(h, 0, &d), GX_EPROTO);
	rdzv_hdr_encode(h, RDZV_JOIN, 10);
	h[4] = RDZV_VMAJOR + 1;
	assert_int_equal(rdzv_hdr_decode(h, 0, &d), GX_EVERSION);
	assert_int_equal(d.vmaj, RDZV_VMAJOR + 1);
	rdzv_hdr_encode(h, RDZV_JOIN, 10);
	h[5] = 77; /* another minor is fine */
	assert_int_equal(rdzv_hdr_decode(h, 0, &d), 0);
}

static void test_header_oversize(void **state)
{
	unsigned char h[RDZV_HDR_LEN];
	struct rdzv_hdr d;

	(void)state;
	rdzv_hdr_encode(h, RDZV_JOIN, RDZV_MAX_BODY);
	assert_int_equal(rdzv_hdr_decode(h, 0, &d), 0);
	rdzv_hdr_encode(h, RDZV_JOIN, RDZV_MAX_BODY + 1);
	assert_int_equal(rdzv_hdr_decode(h, 0, &d), GX_EPROTO);
	rdzv_hdr_encode(h, RDZV_JOIN, RDZV_MAX_BODY + RDZV_MAC_LEN);
	assert_int_equal(rdzv_hdr_decode(h, 1, &d), 0);
	rdzv_hdr_encode(h, RDZV_JOIN, RDZV_MAX_BODY + RDZV_MAC_LEN + 1);
	assert_int_equal(rdzv_hdr_decode(h, 1, &d), GX_EPROTO);
	rdzv_hdr_encode(h, RDZV_PING, 257);
	assert_int_equal(rdzv_hdr_decode(h, 0, &d), GX_EPROTO);
	/* a table only inside a session */
	rdzv_hdr_encode(h, RDZV_COMMIT, RDZV_MAX_TABLE_BODY + RDZV_MAC_LEN);
	assert_int_equal(rdzv_hdr_decode(h, 1, &d), 0);
	assert_int_equal(rdzv_hdr_decode(h, 0, &d), GX_EPROTO);
	rdzv_hdr_encode(h, RDZV_COMMIT, RDZV_MAX_TABLE_BODY + RDZV_MAC_LEN + 1);
	assert_int_equal(rdzv_hdr_decode(h, 1, &d), GX_EPROTO);
	rdzv_hdr_encode(h, RDZV_COMMIT, 0xffffffffu);
	assert_int_equal(rdzv_hdr_decode(h, 1, &d), GX_EPROTO);
	/* with a MAC the body must at least hold it */
	rdzv_hdr_encode(h, RDZV_JOIN, RDZV_MAC_LEN - 1);
	assert_int_equal(rdzv_hdr_decode(h, 1, &d), GX_EPROTO);
}

static void assert_peer_equal(const struct rdzv_peer *a, const struct rdzv_peer *b)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->index, b->index);
	assert_true(a->incarnation == b->incarnation);
	assert_string_equal(a->iface, b->iface);
	assert_string_equal(a->addr4, b->addr4);
	assert_string_equal(a->addr6, b->addr6);
	assert_string_equal(a->rdma_dev, b->rdma_dev);
	assert_int_equal(a->rdma_port, b->rdma_port);
	assert_int_equal(a->gid_index, b->gid_index);
	assert_int_equal(a->link_layer, b->link_layer);
	assert_int_equal(a->slots, b->slots);
	assert_int_equal(a->nd_err, b->nd_err);
	assert_string_equal(a->nd_why, b->nd_why);
	assert_int_equal(a->flags, b->flags);
	assert_string_equal(a->primary, b->primary);
	assert_int_equal(a->mtu, b->mtu);
	assert_string_equal(a->rails, b->rails);
}

static void test_msg_round_trip(void **state)
{
	struct rdzv_buf b = {0};
	struct rdzv_peer p;
	struct rdzv_msg m;
	unsigned char nonce[RDZV_NONCE_LEN];

	(void)state;
	sample_peer(&p);
	memset(nonce, 0xab, sizeof(nonce));
	rdzv_put(&b, T_NONCE, nonce, sizeof(nonce));
	rdzv_put_u32(&b, T_RANK, 7);
	rdzv_put_u32(&b, T_WORLD, 9);
	rdzv_put_u32(&b, T_CODE, (uint32_t)GX_EPEERS);
	rdzv_put_u64(&b, T_ROUND, 0xfedcba9876543210ull);
	rdzv_put_str(&b, T_MASTER, "192.168.2.1");
	rdzv_put_str(&b, T_TEXT, "waiting for a, b");
	rdzv_put_peer(&b, T_PEER, &p);
	rdzv_put_peer(&b, T_ENTRY, &p);
	rdzv_put_peer(&b, T_ENTRY, &p);
	assert_int_equal(b.err, 0);
	assert_int_equal(rdzv_msg_decode(RDZV_COMMIT, b.p, b.len, &m), 0);
	assert_true(m.has_nonce);
	assert_memory_equal(m.nonce, nonce, sizeof(nonce));
	assert_int_equal(m.rank, 7);
	assert_int_equal(m.world, 9);
	assert_int_equal(m.code, GX_EPEERS);
	assert_true(m.round == 0xfedcba9876543210ull);
	assert_string_equal(m.master, "192.168.2.1");
	assert_string_equal(m.text, "waiting for a, b");
	assert_true(m.has_peer);
	assert_peer_equal(&m.peer, &p);
	assert_int_equal(m.ntable, 2);
	rdzv_buf_free(&b);
}

/* Every prefix: decodes cleanly exactly at item boundaries, else GX_EPROTO. */
static void test_every_truncation(void **state)
{
	struct rdzv_buf b = {0};
	struct rdzv_peer p, q;
	struct rdzv_msg m;
	size_t len, off, bound[64], nb = 0, i;
	const unsigned char *v;
	uint16_t t, n;

	(void)state;
	sample_peer(&p);
	rdzv_put_str(&b, T_NAME, p.name);
	rdzv_put_peer(&b, T_PEER, &p);
	rdzv_put_u64(&b, T_INCARNATION, 5);
	bound[nb++] = 0;
	for (off = 0; rdzv_tlv_next(b.p, b.len, &off, &t, &v, &n) == 1;)
		bound[nb++] = off;
	assert_int_equal(nb, 4);
	for (len = 0; len <= b.len; len++) {
		int at = 0, rc = rdzv_msg_decode(RDZV_JOIN, b.p, len, &m);

		for (i = 0; i < nb; i++)
			at |= bound[i] == len;
		assert_int_equal(rc, at ? 0 : GX_EPROTO);
	}
	/* and inside the nested peer entry */
	rdzv_buf_free(&b);
	rdzv_put_peer(&b, T_PEER, &p);
	for (len = 4; len < b.len; len++) {
		int rc = rdzv_peer_decode(b.p + 4, len - 4, &q);

		assert_true(rc == 0 || rc == GX_EPROTO);
	}
	assert_int_equal(rdzv_peer_decode(b.p + 4, b.len - 4, &q), 0);
	assert_peer_equal(&q, &p);
	rdzv_buf_free(&b);
}

static void test_unknown_tlv_skipped(void **state)
{
	struct rdzv_buf b = {0};
	struct rdzv_msg m;
	unsigned char blob[300];

	(void)state;
	memset(blob, 'x', sizeof(blob));
	rdzv_put(&b, 999, blob, sizeof(blob));
	rdzv_put_u32(&b, T_RANK, 3);
	rdzv_put(&b, 0xffff, NULL, 0);
	rdzv_put_str(&b, T_NAME, "a-b");
	assert_int_equal(rdzv_msg_decode(RDZV_ASSIGN, b.p, b.len, &m), 0);
	assert_int_equal(m.rank, 3);
	assert_string_equal(m.name, "a-b");
	rdzv_buf_free(&b);
}

static void test_bad_values(void **state)
{
	struct rdzv_buf b = {0};
	struct rdzv_msg m;
	char longname[300];

	(void)state;
	rdzv_put(&b, T_NAME, "a\0b", 3); /* NUL inside a string */
	assert_int_equal(rdzv_msg_decode(RDZV_HELLO, b.p, b.len, &m), GX_EPROTO);
	rdzv_buf_free(&b);
	memset(longname, 'a', sizeof(longname));
	rdzv_put(&b, T_NAME, longname, 254); /* one past the bound */
	assert_int_equal(rdzv_msg_decode(RDZV_HELLO, b.p, b.len, &m), GX_EPROTO);
	rdzv_buf_free(&b);
	rdzv_put(&b, T_NAME, longname, 253);
	assert_int_equal(rdzv_msg_decode(RDZV_HELLO, b.p, b.len, &m), 0);
	rdzv_buf_free(&b);
	rdzv_put(&b, T_RANK, "abc", 3); /* wrong integer width */
	assert_int_equal(rdzv_msg_decode(RDZV_ASSIGN, b.p, b.len, &m), GX_EPROTO);
	rdzv_buf_free(&b);
	rdzv_put(&b, T_NONCE, "short", 5);
	assert_int_equal(rdzv_msg_decode(RDZV_HELLO, b.p, b.len, &m), GX_EPROTO);
	rdzv_buf_free(&b);
}

static void test_peer_check(void **state)
{
	struct rdzv_peer p;
	char why[160];

	(void)state;
	sample_peer(&p);
	snprintf(p.addr6, sizeof(p.addr6), "FD00:0:0::0007");
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), 0);
	assert_string_equal(p.addr6, "fd00::7"); /* re-printed, never copied */
	sample_peer(&p);
	snprintf(p.name, sizeof(p.name), "a;touch /tmp/x");
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), GX_EINVAL_NAME);
	sample_peer(&p);
	snprintf(p.iface, sizeof(p.iface), "abcdefghijklmno"); /* 15: ok */
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), 0);
	snprintf(p.iface, sizeof(p.iface), "net1/x");
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), GX_EINVAL_NAME);
	sample_peer(&p);
	memset(p.rdma_dev, 'm', 63);
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), 0);
	snprintf(p.rdma_dev, sizeof(p.rdma_dev), "mlx5 0");
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), GX_EINVAL_NAME);
	sample_peer(&p);
	snprintf(p.addr4, sizeof(p.addr4), "1.2.3.999");
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), GX_EINVAL_NAME);
	sample_peer(&p);
	snprintf(p.addr4, sizeof(p.addr4), "::1");
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), GX_EINVAL_NAME);
	sample_peer(&p);
	snprintf(p.nd_why, sizeof(p.nd_why), "down $(reboot)");
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), GX_EINVAL_NAME);
	sample_peer(&p);
	snprintf(p.seen_from, sizeof(p.seen_from), "10.0.0.1\n");
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), GX_EINVAL_NAME);
	sample_peer(&p);
	snprintf(p.rails, sizeof(p.rails), "mlx5_0:1/net1/1.2.3.4;reboot");
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), GX_EINVAL_NAME);
	sample_peer(&p);
	p.mtu = 65537;
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), GX_EINVAL_NAME);
	sample_peer(&p);
	snprintf(p.primary, sizeof(p.primary), "10.0.0.300");
	assert_int_equal(rdzv_peer_check(&p, why, sizeof(why)), GX_EINVAL_NAME);
}

static void test_list_and_sanitize(void **state)
{
	char out[1024], s[32];
	struct rdzv_list l = {.out = out, .cap = sizeof(out)};
	int i;

	(void)state;
	out[0] = '\0';
	for (i = 0; i < 50; i++)
		rdzv_list_add(&l, "w-%d", i);
	rdzv_list_end(&l);
	assert_non_null(strstr(out, "w-0, w-1, "));
	assert_non_null(strstr(out, "w-39 and 10 more"));
	assert_null(strstr(out, "w-40"));
	rdzv_sanitize(s, sizeof(s), "a'b\"c$d`e\nf");
	assert_string_equal(s, "a?b?c?d?e?f");
}

static void test_backoff(void **state)
{
	int a;

	(void)state;
	for (a = 0; a < 20; a++) {
		int64_t d = rdzv_backoff_ms(a);

		assert_true(d >= RDZV_BACKOFF_MIN_MS / 2);
		assert_true(d < RDZV_BACKOFF_MAX_MS);
	}
	assert_true(rdzv_backoff_ms(0) < RDZV_BACKOFF_MIN_MS);
	assert_true(rdzv_backoff_ms(10) >= RDZV_BACKOFF_MAX_MS / 2);
}

/* refused connects: every d = 5 ms for a small job, world/2000 s for a large one, so the
 * coordinator sees ~2,000 SYN/s in all; the first after a random phase in [0, d) */
static void test_refused_pace(void **state)
{
	static const uint32_t worlds[] = {2, 8, 64, 1024, 16384};
	size_t w;
	int i;

	(void)state;
	for (w = 0; w < sizeof(worlds) / sizeof(worlds[0]); w++) {
		int64_t d = (int64_t)worlds[w] / 2, sum = 0;

		if (d < RDZV_REFUSED_MIN_MS)
			d = RDZV_REFUSED_MIN_MS;
		for (i = 0; i < 2000; i++) {
			int64_t v = rdzv_refused_ms(worlds[w], 1); /* a random phase in [0, d) */

			assert_true(v >= 0);
			assert_true(v < d);
			sum += v;
			assert_int_equal(rdzv_refused_ms(worlds[w], 0), d); /* then every d */
		}
		/* the phase's mean is (d - 1) / 2; 0.1 d is > 10 standard errors off */
		assert_true(fabs((double)sum / 2000 - (double)(d - 1) / 2) <=
			    0.1 * (double)d + 0.2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_header_round_trip), cmocka_unit_test(test_header_bad),
	    cmocka_unit_test(test_header_oversize),   cmocka_unit_test(test_msg_round_trip),
	    cmocka_unit_test(test_every_truncation),  cmocka_unit_test(test_unknown_tlv_skipped),
	    cmocka_unit_test(test_bad_values),	      cmocka_unit_test(test_peer_check),
	    cmocka_unit_test(test_list_and_sanitize), cmocka_unit_test(test_backoff),
	    cmocka_unit_test(test_refused_pace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
