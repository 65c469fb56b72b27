/* SPDX-License-Identifier: MIT */
/*
 * test_agent_token.c - the token's entropy rule: human tokens of 16+
 * bytes are refused with what is required; every token of the forms the project makes
 * (tests/e2e/cluster.sh: 32 random bytes as 64 hex digits; `gxboot token`: base64) and 32
 * raw random bytes pass (property over 20000 seeded draws each, the lowest estimate and its
 * token printed); `gxboot token` draws again rather than print a token that would be refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pipeline/run_int.h"
#include "rdzv/gx/gx.h"

static char err[512];

static int load(const char *token)
{
	struct agent_opts o;
	struct agent_token t = {0};
	int rc;

	memset(&o, 0, sizeof(o));
	o.port = 29410;
	setenv("GXBOOT_TOKEN", token, 1);
	err[0] = '\0';
	rc = agent_token_load(&o, &t, err, sizeof(err));
	agent_token_free(&t);
	return rc;
}

/*
 * Draw k of a seeded stream: the properties below hold over a fixed sample, so the test
 * cannot fail by chance; GXBOOT_TEST_SEED (decimal) picks another sample to explore.
 */
static unsigned long seed_base(void)
{
	const char *e = getenv("GXBOOT_TEST_SEED");

	return e ? strtoul(e, NULL, 10) : 25;
}

static void draw(unsigned char *raw, size_t n, unsigned long base, unsigned long k)
{
	unsigned char seed[randombytes_SEEDBYTES] = {0};

	memcpy(seed, &base, sizeof(base));
	memcpy(seed + 16, &k, sizeof(k));
	randombytes_buf_deterministic(raw, n, seed);
}

static void keep_lowest(int b, const char *tok, int *lo, char *lo_tok, size_t lo_len)
{
	if (b < *lo) {
		*lo = b;
		snprintf(lo_tok, lo_len, "%s", tok);
	}
}

static void test_human_tokens_refused(void **state)
{
	static const char *const weak[] = {
	    "my-job-token-123",		    /* the review's 16-byte token: 207 guesses */
	    "correct horse battery staple", /* 28 bytes of words */
	    "0123456789abcdef0123",
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    "abababababababababababababababababababababababab",
	    "0000111122223333444455556666777788889999",
	    "0123456789abcdef0123456789abcdef", /* hex, but a count */
	    "correcthorsebatterystaple",	/* base64's alphabet, 25 characters of words */
	    "CorrectHorseBatteryStaple",
	    "CORRECTHORSEBATTERYSTAPLEHORSE",
	    "TheQuickBrownFoxJumpsOverTheLazyDog",
	    "Correct4Horse2Battery9Staple",
	    "ilovemydogandmycatverymuch123",
	    "correct-horse-battery-staple-42",
	    "AcmeClusterSvcTknSecretProd", /* words and abbreviations (review of ba05550) */
	    "TrainingJobMgmtSvcCfgSecret",
	    "ProductionClusterPwdSecretKey",
	    "DarkSideOfTheMoonPinkFloyd", /* capitalised two-letter words (156 bits before) */
	    "MyDogIsCalledRex2024",
	    NULL,
	};
	size_t i;

	(void)state;
	for (i = 0; weak[i]; i++) {
		if (load(weak[i]) != GX_EUSAGE)
			fail_msg("token '%s' accepted", weak[i]);
		assert_non_null(strstr(err, "at least 128 required"));
		assert_non_null(strstr(err, "32 random bytes"));
	}
}

static void test_random_tokens_pass(void **state)
{
	unsigned char raw[32];
	char hex[65], b64[sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_ORIGINAL)];
	char lo_tok[sizeof(b64)] = "";
	int k, lo_hex = 1 << 30, lo_b64 = 1 << 30, lo_raw = 1 << 30, b;
	unsigned long base = seed_base();

	(void)state;
	assert_true(sodium_init() >= 0);
	for (k = 0; k < 20000; k++) {
		draw(raw, sizeof(raw), base, (unsigned long)k);
		sodium_bin2hex(hex, sizeof(hex), raw, sizeof(raw)); /* cluster_token's form */
		sodium_bin2base64(b64, sizeof(b64), raw, sizeof(raw),
				  sodium_base64_VARIANT_ORIGINAL);
		b = agent_token_bits((unsigned char *)hex, 64);
		lo_hex = b < lo_hex ? b : lo_hex;
		b = agent_token_bits((unsigned char *)b64, strlen(b64));
		keep_lowest(b, b64, &lo_b64, lo_tok, sizeof(lo_tok));
		b = agent_token_bits(raw, sizeof(raw));
		lo_raw = b < lo_raw ? b : lo_raw;
	}
	printf("# lowest estimate over 20000 draws (seed %lu): hex %d, base64 %d (%s), raw %d bits "
	       "(rule: %d)\n",
	       base, lo_hex, lo_b64, lo_tok, lo_raw, AGENT_TOKEN_MIN_BITS);
	assert_true(lo_hex >= AGENT_TOKEN_MIN_BITS + 40);
	assert_true(lo_b64 >= AGENT_TOKEN_MIN_BITS + 40);
	assert_true(lo_raw >= AGENT_TOKEN_MIN_BITS);
	assert_int_equal(load(hex), 0);
	assert_int_equal(load(b64), 0);
}

/* `gxboot token`'s draw: one that reads as words (it would be refused) is drawn again. */
static const char words44[] = "CorrectHorseBatteryStapleCorrectHorseBattoo=";
static int fill_calls, fill_words;

static void fill(void *buf, size_t len)
{
	size_t got = 0;

	if (fill_calls++ < fill_words) {
		assert_int_equal(sodium_base642bin(buf, len, words44, strlen(words44), NULL, &got,
						   NULL, sodium_base64_VARIANT_ORIGINAL),
				 0);
		assert_int_equal(got, len);
		return;
	}
	draw(buf, len, seed_base(), 1000000u + (unsigned long)fill_calls);
}

static void test_token_draw_again(void **state)
{
	char text[AGENT_TOKEN_TEXT_LEN];

	(void)state;
	assert_true(sodium_init() >= 0);
	assert_true(agent_token_bits((const unsigned char *)words44, strlen(words44)) <
		    AGENT_TOKEN_MIN_BITS);
	fill_calls = 0;
	fill_words = 0;
	assert_int_equal(agent_token_draw(fill, text, sizeof(text)), 0);
	assert_int_equal(fill_calls, 1);
	fill_calls = 0;
	fill_words = 2; /* two refused draws, then a random one */
	assert_int_equal(agent_token_draw(fill, text, sizeof(text)), 0);
	assert_int_equal(fill_calls, 3);
	assert_int_equal(strlen(text), 44);
	assert_string_not_equal(text, words44);
	assert_int_equal(load(text), 0);
	fill_calls = 0;
	fill_words = 1000; /* a source that only gives words: an error, nothing printed */
	assert_int_equal(agent_token_draw(fill, text, sizeof(text)), -EAGAIN);
	assert_int_equal(fill_calls, 16);
	assert_int_equal(text[0], '\0');
	assert_int_equal(agent_token_draw(fill, text, AGENT_TOKEN_TEXT_LEN - 1), -ENOBUFS);
}

/*
 * `openssl rand -hex 16` and `openssl rand -base64 16` (16 bytes, exactly 128 bits) and
 * `-base64 32` pass: the lowest estimate and the share refused over 20000 draws each. A
 * 16-byte base64 token is refused when it reads as words (about 1 in 5000 draws, token.c)
 * or has one case only.
 */
static void test_openssl_rand_16(void **state)
{
	unsigned char raw[32];
	char hex[65], b64[sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_ORIGINAL)];
	char lo_tok[sizeof(b64)] = "";
	int k, lo_hex = 1 << 30, lo_b64 = 1 << 30, lo_b32 = 1 << 30, b, bad_b64 = 0;
	unsigned long base = seed_base();

	(void)state;
	assert_true(sodium_init() >= 0);
	for (k = 0; k < 20000; k++) {
		draw(raw, sizeof(raw), base, 50000u + (unsigned long)k);
		sodium_bin2hex(hex, sizeof(hex), raw, 16);
		if (k & 1) /* both cases */
			for (b = 0; hex[b]; b++)
				hex[b] = (char)(hex[b] >= 'a' ? hex[b] - 32 : hex[b]);
		b = agent_token_bits((unsigned char *)hex, 32);
		lo_hex = b < lo_hex ? b : lo_hex;
		sodium_bin2base64(b64, sizeof(b64), raw, 16, sodium_base64_VARIANT_ORIGINAL);
		b = agent_token_bits((unsigned char *)b64, strlen(b64));
		bad_b64 += b < AGENT_TOKEN_MIN_BITS;
		if (k & 1) { /* unpadded */
			b64[22] = '\0';
			b = agent_token_bits((unsigned char *)b64, 22);
			bad_b64 += b < AGENT_TOKEN_MIN_BITS;
		}
		lo_b64 = b < lo_b64 ? b : lo_b64;
		sodium_bin2base64(b64, sizeof(b64), raw, 32, sodium_base64_VARIANT_ORIGINAL);
		b = agent_token_bits((unsigned char *)b64, strlen(b64));
		keep_lowest(b, b64, &lo_b32, lo_tok, sizeof(lo_tok));
	}
	printf("# openssl rand over 20000 draws (seed %lu): -hex 16 lowest %d, -base64 16 refused "
	       "%d of 30000 (lowest %d), -base64 32 lowest %d bits (%s)\n",
	       base, lo_hex, bad_b64, lo_b64, lo_b32, lo_tok);
	assert_true(lo_hex >= AGENT_TOKEN_MIN_BITS);
	assert_true(bad_b64 <= 30); /* 1 in 1000 at most; about 1 in 5000 expected */
	assert_true(lo_b32 >= AGENT_TOKEN_MIN_BITS + 40);
	/* fixed draws of each form, through the loader */
	assert_int_equal(load("3f9a0c5e7b21d48e96a0f3c27d5b8e14"), 0);
	assert_int_equal(load("3F9A0C5E7B21D48E96A0F3C27D5B8E14"), 0);
	assert_int_equal(load("P2xQ8vN0k3Zr+Tq7Lb/9wA=="), 0);
	assert_int_equal(load("P2xQ8vN0k3Zr+Tq7Lb/9wA"), 0);
	assert_int_equal(load("k7Gq2pR9vXz0N+4bLm1cWs8YtEo/3hUj5dFa6iQnVyM="), 0);
	/* too short, or padding that is not base64's, gets no such credit */
	assert_int_equal(load("P2xQ8vN0k3Zr+Tq7Lb/9w"), GX_EUSAGE);
	assert_int_equal(load("P2xQ8vN0k3Zr+Tq7Lb/9wA="), GX_EUSAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_human_tokens_refused),
	    cmocka_unit_test(test_random_tokens_pass),
	    cmocka_unit_test(test_token_draw_again),
	    cmocka_unit_test(test_openssl_rand_16),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
