/* SPDX-License-Identifier: MIT */
/*
 * token.c - the job token, which authenticates the rendezvous: --token-file F (links followed:
 * Secret volumes are ..data symlinks) or GXBOOT_TOKEN; at least 16 bytes and an estimated
 * AGENT_TOKEN_MIN_BITS (128) bits of entropy (a captured handshake allows
 * offline guessing of a human token); never logged; removed from the environment
 * CMD gets; wiped once the keys are derived. `gxboot token` prints a fresh one.
 */
#include "agent/pipeline/run_int.h"

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

static int is_lower(unsigned char c)
{
	return c >= 'a' && c <= 'z';
}

static int is_upper(unsigned char c)
{
	return c >= 'A' && c <= 'Z';
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* "0123..." and "fedc...": neighbours one apart. */
static size_t steps(const unsigned char *t, size_t len)
{
	size_t i, n = 0;

	for (i = 1; i < len; i++)
		n += t[i] == t[i - 1] + 1 || t[i] + 1 == t[i - 1];
	return n;
}

/* Characters that repeat neither of the two before ("aaaa", "abab" carry nothing). */
static size_t fresh_chars(const unsigned char *t, size_t len)
{
	size_t i, fresh = 0;

	for (i = 0; i < len; i++)
		fresh += (i < 1 || t[i] != t[i - 1]) && (i < 2 || t[i] != t[i - 2]);
	return fresh;
}

/* Not a run, not a cycle, not a count: what a random draw looks like. */
static int looks_drawn(const unsigned char *t, size_t len)
{
	return fresh_chars(t, len) * 2 >= len && steps(t, len) * 2 <= len;
}

/* 32+ hex digits of one case (`openssl rand -hex 16`): 4 bits each. */
static int hex_bits(const unsigned char *t, size_t len)
{
	int lower = 0, upper = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (is_digit(t[i]))
			continue;
		lower |= t[i] >= 'a' && t[i] <= 'f';
		upper |= t[i] >= 'A' && t[i] <= 'F';
		if (!(t[i] >= 'a' && t[i] <= 'f') && !(t[i] >= 'A' && t[i] <= 'F'))
			return 0;
	}
	return !(lower && upper) && looks_drawn(t, len) ? (int)(4 * len) : 0;
}

/* "Of", "My", "Is": a capital and one lower-case letter is a word only from this list. */
static int two_letter_word(unsigned char a, unsigned char b)
{
	static const char words[] = "Of My Is In On At To It Be By Do Go He Me No So Up We Or An "
				    "As If Us Am Oh Ok Hi";
	size_t i;

	for (i = 0; i + 1 < sizeof(words); i += 3)
		if ((unsigned char)words[i] == a && (unsigned char)words[i + 1] == b)
			return 1;
	return 0;
}

/*
 * Words: every run of letters is capitalised or lower-case words of 2+ lower-case
 * letters ("CorrectHorse", "staple"), a listed two-letter word ("Of"), or capitals
 * only ("HORSE"), and letters are 80% of it. The base64 of random bytes is read so
 * with a chance of 2.0e-4 for 16 bytes and 1.1e-7 for 32 (exact, by dynamic
 * programming over the characters; 1.8e-4 and 9.1e-8 without the two-letter words);
 * refusing those costs a drawn token nothing worth counting, and `gxboot token`
 * draws again rather than print one. A vowel in every word would cut both 10 to 40
 * times but let "AcmeClusterSvcTknSecretProd" through (review of ba05550).
 */
static int wordlike(const unsigned char *t, size_t len)
{
	size_t i = 0, letters = 0, j, k;

	while (i < len) {
		if (!is_lower(t[i]) && !is_upper(t[i])) {
			i++;
			continue;
		}
		for (j = i; j < len && (is_lower(t[j]) || is_upper(t[j])); j++)
			;
		letters += j - i;
		for (k = i; k < j && is_upper(t[k]); k++)
			;
		if (!(k == j && j - i >= 3)) {
			for (k = i; k < j;) {
				size_t w = k + (is_upper(t[k]) ? 1 : 0), e = w;

				while (e < j && is_lower(t[e]))
					e++;
				if (e - w < 2 &&
				    !(e - w == 1 && w > k && two_letter_word(t[k], t[w])))
					return 0;
				k = e;
			}
		}
		i = j;
	}
	return letters * 10 >= len * 8;
}

/* Standard base64 of 16+ bytes (`openssl rand -base64 16`, `gxboot token`): 6 bits each. */
static int base64_bits(const unsigned char *t, size_t len)
{
	size_t n = len, i;
	int lower = 0, upper = 0;

	while (n > 0 && len - n < 2 && t[n - 1] == '=')
		n--;
	if (n < len && len % 4 != 0)
		return 0;
	for (i = 0; i < n; i++) {
		lower |= is_lower(t[i]);
		upper |= is_upper(t[i]);
		if (!is_lower(t[i]) && !is_upper(t[i]) && !is_digit(t[i]) && t[i] != '+' &&
		    t[i] != '/')
			return 0;
	}
	if (n < 22 || n * 6 / 8 < 16 || !lower || !upper || !looks_drawn(t, n) || wordlike(t, n))
		return 0;
	return (int)(6 * n);
}

int agent_token_bits(const unsigned char *t, size_t len)
{
	size_t count[256] = {0}, i, fresh, run;
	double h = 0, cls;
	int drawn;

	if (len == 0)
		return 0;
	drawn = hex_bits(t, len);
	if (!drawn)
		drawn = base64_bits(t, len);
	for (i = 0; i < len; i++)
		count[t[i]]++;
	for (i = 0; i < 256; i++)
		if (count[i])
			h += (double)count[i] * (lg2((double)len) - lg2((double)count[i]));
	fresh = fresh_chars(t, len);
	run = steps(t, len);
	cls = (double)(fresh > run ? fresh - run : 0) * class_bits(t, len);
	if (h > cls)
		h = cls;
	if (wordlike(t, len) && h > 2.0 * (double)len)
		h = 2.0 * (double)len; /* English carries 1 to 2 bits a letter */
	return (int)h > drawn ? (int)h : drawn;
}

_Static_assert(AGENT_TOKEN_TEXT_LEN ==
		   sodium_base64_ENCODED_LEN(AGENT_TOKEN_RAW, sodium_base64_VARIANT_ORIGINAL),
	       "AGENT_TOKEN_TEXT_LEN");

int agent_token_draw(void (*fill)(void *buf, size_t len), char *text, size_t textlen)
{
	unsigned char raw[AGENT_TOKEN_RAW];
	int tries, rc = -EAGAIN;

	if (textlen < AGENT_TOKEN_TEXT_LEN)
		return -ENOBUFS;
	/* A draw that would be refused (it reads as words, about 1e-7) is drawn again. */
	for (tries = 0; tries < AGENT_TOKEN_DRAWS; tries++) {
		fill(raw, sizeof(raw));
		sodium_bin2base64(text, textlen, raw, sizeof(raw), sodium_base64_VARIANT_ORIGINAL);
		if (agent_token_bits((const unsigned char *)text, strlen(text)) >=
		    AGENT_TOKEN_MIN_BITS) {
			rc = 0;
			goto out;
		}
	}
	sodium_memzero(text, textlen);
out:
	sodium_memzero(raw, sizeof(raw));
	return rc;
}

int agent_cmd_token(char *err, size_t errlen)
{
	char text[AGENT_TOKEN_TEXT_LEN];
	int rc;

	if (sodium_init() < 0) {
		snprintf(err, errlen, "cannot initialise libsodium");
		return -ENOMEM;
	}
	rc = agent_token_draw(randombytes_buf, text, sizeof(text));
	if (rc < 0) {
		snprintf(err, errlen,
			 "the random source gave %d draws in a row that would be refused",
			 AGENT_TOKEN_DRAWS);
		return rc;
	}
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
