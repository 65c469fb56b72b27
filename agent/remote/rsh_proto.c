/* SPDX-License-Identifier: MIT */
/*
 * rsh_proto.c - what serve and rsh share: the credential file, ssh's argument
 * joining, the handshake proofs, and a non-blocking connection that carries
 * the clear handshake and then secretstream frames (4-byte length, sealed
 * type byte + payload; both bounded before use).
 */
#include "agent/remote/rsh_int.h"
#include "rdzv/rdzv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- credential ---- */
int agent_rsh_key_derive(const unsigned char *token, size_t len, const char *job_id,
			 unsigned char k[RSH_KEY_LEN])
{
	char purpose[160];

	if (snprintf(purpose, sizeof(purpose), "rsh:%s", job_id) >= (int)sizeof(purpose))
		return -EINVAL;
	return rdzv_derive_key(token, len, purpose, k);
}

static int key_parse(char *text, struct rsh_key *key)
{
	char *line, *save = NULL;
	int have_key = 0;
	size_t bin = 0;

	key->port = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "key=", 4) == 0) {
			if (sodium_hex2bin(key->k, RSH_KEY_LEN, line + 4, strlen(line + 4), NULL,
					   &bin, NULL) != 0 ||
			    bin != RSH_KEY_LEN)
				return GX_EUSAGE;
			have_key = 1;
		} else if (strncmp(line, "port=", 5) == 0) {
			if (gx_parse_long(line + 5, 1, 65535, &key->port) < 0)
				return GX_EUSAGE;
		}
	}
	return have_key && key->port ? 0 : GX_EUSAGE;
}

int agent_rsh_key_load(const char *path, struct rsh_key *key, char *err, size_t errlen)
{
	char text[512];
	struct stat st;
	ssize_t n = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot read the remote-exec credential %s: %s", path,
			 strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) == 0 && (st.st_mode & S_IROTH))
		gx_warn("%s is readable by others: it opens remote exec in this job", path);
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	rc = n > 0 && (size_t)n < sizeof(text) - 1 ? key_parse(text, key) : GX_EUSAGE;
	sodium_memzero(text, sizeof(text));
	if (rc < 0)
		snprintf(err, errlen, "%s is not a gxboot remote-exec credential", path);
	return rc;
}

/* ---- ssh's joining ---- */
int agent_rsh_join_args(char *const *argv, int argc, char **out)
{
	size_t len = 0, off = 0;
	char *s;
	int i;

	*out = NULL;
	for (i = 0; i < argc; i++) {
		len += strlen(argv[i]) + 1;
		if (len > RSH_MAX_CMD)
			return -E2BIG;
	}
	s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	for (i = 0; i < argc; i++) {
		size_t l = strlen(argv[i]);

		if (i)
			s[off++] = ' ';
		memcpy(s + off, argv[i], l);
		off += l;
	}
	s[off] = '\0';
	*out = s;
	return 0;
}

/* ---- proofs ---- */
static void mac3(const unsigned char k[RSH_KEY_LEN], const char *label,
		 const unsigned char nc[RSH_NONCE_LEN], const unsigned char ns[RSH_NONCE_LEN],
		 unsigned char out[32])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, k, RSH_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label) + 1);
	crypto_auth_hmacsha256_update(&st, nc, RSH_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, ns, RSH_NONCE_LEN);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

void agent_rsh_proof(const unsigned char k[RSH_KEY_LEN], char who,
		     const unsigned char nc[RSH_NONCE_LEN], const unsigned char ns[RSH_NONCE_LEN],
		     unsigned char out[32])
{
	mac3(k, who == 'C' ? "gxboot rsh client proof" : "gxboot rsh server proof", nc, ns, out);
}

void agent_rsh_stream_keys(const unsigned char k[RSH_KEY_LEN],
			   const unsigned char nc[RSH_NONCE_LEN],
			   const unsigned char ns[RSH_NONCE_LEN], unsigned char c2s[32],
			   unsigned char s2c[32])
{
	mac3(k, "gxboot rsh client to server", nc, ns, c2s);
	mac3(k, "gxboot rsh server to client", nc, ns, s2c);
}

/* ---- connection ---- */
int agent_rsh_conn_init(struct rsh_conn *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->in = malloc(4 + RSH_MAX_CT);
	return c->in ? 0 : -ENOMEM;
}

void agent_rsh_conn_free(struct rsh_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	free(c->out);
	sodium_memzero(&c->tx, sizeof(c->tx));
	sodium_memzero(&c->rx, sizeof(c->rx));
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

int agent_rsh_conn_fill(struct rsh_conn *c)
{
	size_t cap = 4 + RSH_MAX_CT;
	ssize_t n;

	while (c->ilen < cap) {
		n = read(c->fd, c->in + c->ilen, cap - c->ilen);
		if (n > 0) {
			c->ilen += (size_t)n;
			continue;
		}
		if (n == 0) {
			c->eof = 1;
			return -ECONNRESET;
		}
		if (errno == EINTR)
			continue;
		return errno == EAGAIN ? 0 : -errno;
	}
	return 0;
}

static void consume(struct rsh_conn *c, size_t n)
{
	memmove(c->in, c->in + n, c->ilen - n);
	c->ilen -= n;
}

int agent_rsh_conn_take(struct rsh_conn *c, void *out, size_t n)
{
	if (c->ilen < n)
		return 0;
	memcpy(out, c->in, n);
	consume(c, n);
	return 1;
}

int agent_rsh_conn_put(struct rsh_conn *c, const void *p, size_t n)
{
	if (c->olen + n > c->ocap) {
		size_t cap = c->ocap ? c->ocap : 4096;
		unsigned char *q;

		if (c->ooff) { /* compact first */
			memmove(c->out, c->out + c->ooff, c->olen - c->ooff);
			c->olen -= c->ooff;
			c->ooff = 0;
		}
		while (cap < c->olen + n)
			cap *= 2;
		if (cap != c->ocap) {
			q = realloc(c->out, cap);
			if (!q)
				return -ENOMEM;
			c->out = q;
			c->ocap = cap;
		}
	}
	memcpy(c->out + c->olen, p, n);
	c->olen += n;
	return 0;
}

int agent_rsh_conn_push_init(struct rsh_conn *c, const unsigned char key[32],
			     unsigned char txhdr[RSH_HDR_LEN])
{
	if (crypto_secretstream_xchacha20poly1305_init_push(&c->tx, txhdr, key) != 0)
		return GX_EPROTO;
	c->sealed |= 1;
	return 0;
}

int agent_rsh_conn_pull_init(struct rsh_conn *c, const unsigned char key[32],
			     const unsigned char rxhdr[RSH_HDR_LEN])
{
	if (crypto_secretstream_xchacha20poly1305_init_pull(&c->rx, rxhdr, key) != 0)
		return GX_EPROTO;
	c->sealed |= 2;
	return 0;
}

int agent_rsh_conn_next(struct rsh_conn *c, uint8_t *type, unsigned char *buf, size_t *len)
{
	unsigned long long plen = 0;
	unsigned char tag = 0;
	uint32_t n;

	if (!(c->sealed & 2) || c->ilen < 4)
		return 0;
	memcpy(&n, c->in, 4);
	n = ntohl(n);
	if (n < crypto_secretstream_xchacha20poly1305_ABYTES + 1 || n > RSH_MAX_CT)
		return GX_EPROTO;
	if (c->ilen < 4 + (size_t)n)
		return 0;
	if (crypto_secretstream_xchacha20poly1305_pull(&c->rx, buf, &plen, &tag, c->in + 4, n, NULL,
						       0) != 0)
		return GX_EMAC;
	consume(c, 4 + (size_t)n);
	*type = buf[0];
	*len = (size_t)plen - 1;
	memmove(buf, buf + 1, *len);
	return 1;
}

int agent_rsh_conn_send(struct rsh_conn *c, uint8_t type, const void *p, size_t len)
{
	unsigned char *plain = NULL, *ct = NULL;
	unsigned long long clen = 0;
	uint32_t n;
	int rc = -ENOMEM;

	if (!(c->sealed & 1) || len + 1 > RSH_MAX_PLAIN)
		return -EINVAL;
	plain = malloc(len + 1);
	ct = malloc(4 + len + 1 + crypto_secretstream_xchacha20poly1305_ABYTES);
	if (!plain || !ct)
		goto out;
	plain[0] = type;
	if (len)
		memcpy(plain + 1, p, len);
	crypto_secretstream_xchacha20poly1305_push(&c->tx, ct + 4, &clen, plain, len + 1, NULL, 0,
						   0);
	n = htonl((uint32_t)clen);
	memcpy(ct, &n, 4);
	rc = agent_rsh_conn_put(c, ct, 4 + (size_t)clen);
	if (rc == 0)
		rc = agent_rsh_conn_flush(c) < 0 ? -EPIPE : 0;
out:
	free(plain);
	free(ct);
	return rc;
}

int agent_rsh_conn_flush(struct rsh_conn *c)
{
	ssize_t n;

	while (c->ooff < c->olen) {
		n = write(c->fd, c->out + c->ooff, c->olen - c->ooff);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 1 : -errno;
		c->ooff += (size_t)n;
	}
	c->ooff = c->olen = 0;
	return 0;
}
