/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rdzv_wire.c - libFuzzer target for the rendezvous decoder: the input
 * is a byte stream as a peer would send it. It goes through the connection
 * reader (header, per-type caps, partial reads) into the TLV decoder and the
 * peer validator, and a short state machine like the coordinator's: frames
 * before the "handshake" are clear, after the second one the session is up
 * and every frame must carry a valid MAC (the fuzzer cannot forge one, so
 * the MAC / sequence path is exercised too).
 */
#include "rdzv/rdzv_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use_frame(uint16_t type, const unsigned char *body, size_t len)
{
	struct rdzv_msg m;
	struct rdzv_peer p;
	char why[160];
	size_t off = 0;
	const unsigned char *v;
	uint16_t t, n;

	if (rdzv_msg_decode(type, body, len, &m) < 0)
		return;
	if (m.has_peer)
		rdzv_peer_check(&m.peer, why, sizeof(why));
	while (m.table && rdzv_tlv_next(m.table, m.table_len, &off, &t, &v, &n) == 1)
		if (t == T_ENTRY && rdzv_peer_decode(v, n, &p) == 0)
			rdzv_peer_check(&p, why, sizeof(why));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned char key[RDZV_KEY_LEN] = {1};
	struct rdzv_conn c;
	unsigned char *body;
	uint16_t type;
	size_t len;
	int sv[2], rc, frames = 0;

	if (size > 60000)
		return 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
		return 0;
	if (size && send(sv[0], data, size, 0) != (ssize_t)size) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	close(sv[0]);
	rdzv_conn_init(&c, sv[1], (int)(size & 1)); /* both roles */
	while ((rc = rdzv_conn_read(&c, &type, &body, &len)) == 1) {
		use_frame(type, body, len);
		free(body);
		if (++frames == 2)
			rdzv_conn_session(&c, key);
	}
	rdzv_conn_reset(&c);
	return 0;
}
