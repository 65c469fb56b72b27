/* SPDX-License-Identifier: MIT */
/*
 * rsh_proto.c - what serve and rsh share: the credential file, ssh's argument
 * joining, the handshake proofs, and a non-blocking connection (a gx_frame) that
 * carries the clear handshake and then secretstream frames (4-byte length, sealed
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
static int rsh_decode(struct gx_frame *f, const unsigned char *hdr, unsigned *type, size_t *blen)
{
	uint32_t n;

	(void)f;
	memcpy(&n, hdr, 4);
	n = ntohl(n);
	if (n < crypto_secretstream_xchacha20poly1305_ABYTES + 1 || n > RSH_MAX_CT)
		return GX_EPROTO;
	*type = 0; /* inside the seal */
	*blen = n;
	return 0;
}

static int rsh_encode(const struct gx_frame *f, unsigned char *hdr, unsigned type, size_t blen)
{
	uint32_t n = htonl((uint32_t)blen);

	(void)f;
	(void)type;
	if (blen > RSH_MAX_CT)
		return -EINVAL;
	memcpy(hdr, &n, 4);
	return 0;
}

/* type | payload, pushed into the output queue's room for it */
static int rsh_seal(struct gx_frame *f, unsigned type, const unsigned char *body, size_t len,
		    unsigned char *out)
{
	struct rsh_conn *c = f->owner;
	unsigned char *plain = malloc(len + 1);

	if (!plain)
		return -ENOMEM;
	plain[0] = (unsigned char)type;
	if (len)
		memcpy(plain + 1, body, len);
	crypto_secretstream_xchacha20poly1305_push(&c->tx, out, NULL, plain, len + 1, NULL, 0, 0);
	free(plain);
	return 0;
}

static const struct gx_frame_fmt rsh_fmt = {
    .hdr_len = 4,
    .decode = rsh_decode,
    .encode = rsh_encode,
};
static const struct gx_frame_seal rsh_seal_tx = {
    .over = 1 + crypto_secretstream_xchacha20poly1305_ABYTES,
    .seal = rsh_seal,
};

void agent_rsh_conn_init(struct rsh_conn *c, int fd)
{
	memset(c, 0, sizeof(*c));
	gx_frame_init(&c->f, fd, &rsh_fmt, &rsh_seal_tx, c);
}

void agent_rsh_conn_free(struct rsh_conn *c)
{
	gx_frame_reset(&c->f);
	sodium_memzero(&c->tx, sizeof(c->tx));
	sodium_memzero(&c->rx, sizeof(c->rx));
	c->sealed = 0;
}

int agent_rsh_conn_take(struct rsh_conn *c, void *out, size_t n)
{
	return gx_frame_read_raw(&c->f, out, n);
}

int agent_rsh_conn_put(struct rsh_conn *c, const void *p, size_t n)
{
	return gx_frame_send_raw(&c->f, p, n);
}

int agent_rsh_conn_push_init(struct rsh_conn *c, const unsigned char key[32],
			     unsigned char txhdr[RSH_HDR_LEN])
{
	if (crypto_secretstream_xchacha20poly1305_init_push(&c->tx, txhdr, key) != 0)
		return GX_EPROTO;
	c->sealed |= 1;
	c->f.sealed_tx = 1;
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
	unsigned char tag = 0, *ct = NULL;
	unsigned t = 0;
	size_t n = 0;
	int rc;

	if (!(c->sealed & 2))
		return 0;
	rc = gx_frame_read(&c->f, &t, &ct, &n);
	if (rc <= 0)
		return rc;
	if (crypto_secretstream_xchacha20poly1305_pull(&c->rx, buf, &plen, &tag, ct, n, NULL, 0) !=
	    0) {
		rc = GX_EMAC;
	} else {
		*type = buf[0];
		*len = (size_t)plen - 1;
		memmove(buf, buf + 1, *len);
	}
	free(ct);
	return rc;
}

int agent_rsh_conn_send(struct rsh_conn *c, uint8_t type, const void *p, size_t len)
{
	int rc;

	if (!(c->sealed & 1) || len + 1 > RSH_MAX_PLAIN)
		return -EINVAL;
	rc = gx_frame_send(&c->f, type, p, len);
	return rc == -ENOMEM ? rc : rc < 0 ? -EPIPE : 0;
}

int agent_rsh_conn_flush(struct rsh_conn *c)
{
	return gx_frame_flush(&c->f);
}
