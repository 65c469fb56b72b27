/* SPDX-License-Identifier: MIT */
/*
 * token.c - the job token (issue 14): --token-file F (links followed: Secret
 * volumes are ..data symlinks) or GXBOOT_TOKEN; at least 16 bytes and an estimated
 * AGENT_TOKEN_MIN_BITS (128) bits of entropy (issue 25: a captured handshake allows
 * offline guessing of a human token); never logged; removed from the environment
 * CMD gets; wiped once the keys are derived. `gxboot token` prints a fresh one.
 */
#include "agent/run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOKEN_MAX 4096
#define TOKEN_MIN 16

static int read_token_file(const char *path, unsigned char *buf, size_t *len, char *err,
			   size_t errlen)
{
	struct stat st;
	ssize_t n;
	int fd = -1, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot read token file %s: %s", path, strerror(-rc));
		rc = GX_EUSAGE;
		goto out;
	}
	if (st.st_mode & S_IROTH)
		gx_warn("token file %s is readable by others (mode %03o); group-readable is enough",
			path, (unsigned)(st.st_mode & 0777));
	n = read(fd, buf, TOKEN_MAX);
	if (n < 0) {
		snprintf(err, errlen, "cannot read token file %s: %s", path, strerror(errno));
		rc = GX_EUSAGE;
		goto out;
	}
	*len = (size_t)n;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

void agent_token_free(struct agent_token *t)
{
	if (t->data) {
		sodium_memzero(t->data, TOKEN_MAX);
		free(t->data);
	}
	t->data = NULL;
	t->len = 0;
}

/* log2(x) for x >= 1 without libm: integer part by halving, then 24 fractional bits. */
static double lg2(double x)
{
	double r = 0, b = 0.5;
	int i;

	while (x >= 2) {
		x /= 2;
		r += 1;
	}
	for (i = 0; i < 24; i++, b /= 2) {
		x *= x;
		if (x >= 2) {
			x /= 2;
			r += b;
		}
	}
	return r;
}

static int class_bits(const unsigned char *t, size_t len)
{
	int hex = 1, b64 = 1;
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = t[i];
		int h = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
		int b = h || (c >= 'g' && c <= 'z') || (c >= 'G' && c <= 'Z') || c == '+' ||
			c == '/' || c == '-' || c == '_' || c == '=';

		hex &= h;
		b64 &= b;
	}
	return hex ? 4 : b64 ? 6 : 8;
}

int agent_token_bits(const unsigned char *t, size_t len)
{
	size_t count[256] = {0}, i, fresh = 0;
	double h = 0, cls;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++) {
		count[t[i]]++;
		/* repeats and two-character cycles ("aaaa", "abab") carry nothing */
		fresh += (i < 1 || t[i] != t[i - 1]) && (i < 2 || t[i] != t[i - 2]);
	}
	for (i = 0; i < 256; i++)
		if (count[i])
			h += (double)count[i] * (lg2((double)len) - lg2((double)count[i]));
	cls = (double)fresh * class_bits(t, len);
	return (int)(h < cls ? h : cls);
}

int agent_cmd_token(char *err, size_t errlen)
{
	unsigned char raw[32];
	char text[sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_ORIGINAL)];

	if (sodium_init() < 0) {
		snprintf(err, errlen, "cannot initialise libsodium");
		return -ENOMEM;
	}
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2base64(text, sizeof(text), raw, sizeof(raw), sodium_base64_VARIANT_ORIGINAL);
	sodium_memzero(raw, sizeof(raw));
	printf("%s\n", text);
	sodium_memzero(text, sizeof(text));
	return fflush(stdout) == 0 ? 0 : -EIO;
}

int agent_token_load(const struct agent_opts *o, struct agent_token *t, char *err, size_t errlen)
{
	const char *env = getenv("GXBOOT_TOKEN");
	int rc = 0;

	t->data = calloc(1, TOKEN_MAX + 1);
	t->len = 0;
	if (!t->data)
		return -ENOMEM;
	if (o->token_file) {
		rc = read_token_file(o->token_file, t->data, &t->len, err, errlen);
	} else if (env && *env) {
		t->len = strnlen(env, TOKEN_MAX);
		memcpy(t->data, env, t->len);
	}
	if (env)
		sodium_memzero((char *)env, strlen(env));
	unsetenv("GXBOOT_TOKEN");
	if (rc < 0)
		goto out;
	while (t->len > 0 && (t->data[t->len - 1] == '\n' || t->data[t->len - 1] == '\r' ||
			      t->data[t->len - 1] == ' ' || t->data[t->len - 1] == '\t'))
		t->len--;
	if (t->len == 0 && (o->token_file || o->require_token)) {
		snprintf(err, errlen, "%s",
			 o->token_file ? "the token file is empty"
				       : "--require-token: no token (set "
					 "--token-file or GXBOOT_TOKEN)");
		rc = GX_EUSAGE;
	} else if (t->len > 0 && t->len < TOKEN_MIN) {
		snprintf(err, errlen, "the job token is shorter than %d bytes", TOKEN_MIN);
		rc = GX_EUSAGE;
	} else if (t->len > 0 && agent_token_bits(t->data, t->len) < AGENT_TOKEN_MIN_BITS) {
		snprintf(err, errlen,
			 "the job token is too guessable for a secret: about %d bits estimated, "
			 "at least %d required (32 random bytes: `gxboot token`, or "
			 "`head -c 32 /dev/urandom | base64`)",
			 agent_token_bits(t->data, t->len), AGENT_TOKEN_MIN_BITS);
		rc = GX_EUSAGE;
	} else if (t->len == 0) {
		gx_warn("no job token: peers are not authenticated, so anyone who reaches port %ld "
			"can join or steer MASTER_ADDR (use --token-file and --require-token)",
			o->port);
	}
out:
	if (rc < 0)
		agent_token_free(t);
	return rc;
}
