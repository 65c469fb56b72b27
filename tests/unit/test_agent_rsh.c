/* SPDX-License-Identifier: MIT */
/*
 * test_agent_rsh.c - remote exec pieces: ssh's argument joining,
 * the credential file, the handshake proofs, the sealed frame stream (round
 * trip, partial input, tampering, replay, length bounds), HOST mapping.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sodium.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/peers/peers_int.h"
#include "agent/pipeline/run_int.h"
#include "agent/remote/rsh_int.h"
#include "rdzv/gx/gx.h"

static char err[512];

static void join_is(char *const *argv, int argc, const char *want)
{
	char *s = NULL;

	assert_int_equal(agent_rsh_join_args(argv, argc, &s), 0);
	assert_string_equal(s, want);
	free(s);
}

static void test_join(void **state)
{
	char *plain[] = {"orted", "-mca", "ess", "\"env\""};
	char *spaces[] = {"echo", "a  b", "c"};
	char *quotes[] = {"printf", "'%s'", "\"x y\""};
	char *dollar[] = {"echo", "$HOME", "${X:-1}", "`id`"};
	char *empty[] = {"echo", "", "x", ""};
	char *one[] = {"PATH=/usr/bin:$PATH ; export PATH ; orted"};
	char *big[2] = {"x", NULL};
	char *s = NULL;

	(void)state;
	/* as ssh: one space between words, nothing quoted (the remote sh -c splits again) */
	join_is(plain, 4, "orted -mca ess \"env\"");
	join_is(spaces, 3, "echo a  b c");
	join_is(quotes, 3, "printf '%s' \"x y\"");
	join_is(dollar, 4, "echo $HOME ${X:-1} `id`");
	join_is(empty, 4, "echo  x ");
	join_is(one, 1, one[0]);
	join_is(plain, 0, "");
	big[1] = malloc(RSH_MAX_CMD + 1);
	assert_non_null(big[1]);
	memset(big[1], 'a', RSH_MAX_CMD);
	big[1][RSH_MAX_CMD] = '\0';
	assert_int_equal(agent_rsh_join_args(big, 2, &s), -E2BIG);
	assert_null(s);
	big[1][RSH_MAX_CMD - 3] = '\0'; /* "x " + that + NUL fits exactly */
	assert_int_equal(agent_rsh_join_args(big, 2, &s), 0);
	assert_int_equal(strlen(s), RSH_MAX_CMD - 1);
	free(s);
	free(big[1]);
}

static void test_key_file(void **state)
{
	char dir[] = "/tmp/gxrshXXXXXX", path[64];
	unsigned char k[RSH_KEY_LEN], k2[RSH_KEY_LEN];
	struct rsh_key key;
	struct stat st;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/rsh.key", dir);
	assert_int_equal(agent_rsh_key_derive((const unsigned char *)"tok", 3, "job-a", k), 0);
	assert_int_equal(agent_rsh_key_derive((const unsigned char *)"tok", 3, "job-b", k2), 0);
	assert_memory_not_equal(k, k2, RSH_KEY_LEN); /* bound to the job */
	assert_int_equal(agent_rsh_key_derive((const unsigned char *)"tok2", 4, "job-a", k2), 0);
	assert_memory_not_equal(k, k2, RSH_KEY_LEN); /* and to the token */
	{
		/* the pipeline writes it into --out: these bytes, 0600 */
		struct agent_opts o = {.out = dir};
		struct agent_run r = {.o = &o, .port = 29412 - RSH_PORT_OFFSET, .have_rsh_key = 1};
		char hex[2 * RSH_KEY_LEN + 1], want[RSH_KEY_TEXT_MAX], got[RSH_KEY_TEXT_MAX] = "";
		FILE *g;

		memcpy(r.rsh_key, k, RSH_KEY_LEN);
		assert_int_equal(agent_run_serve_write_key(&r, err, sizeof(err)), 0);
		close(r.out_fd);
		sodium_bin2hex(hex, sizeof(hex), k, RSH_KEY_LEN);
		snprintf(want, sizeof(want), "key=%s\nport=29412\n", hex);
		g = fopen(path, "r");
		assert_non_null(g);
		assert_true(fread(got, 1, sizeof(got) - 1, g) > 0);
		fclose(g);
		assert_string_equal(got, want);
		assert_int_equal(agent_rsh_key_text(k, 29412, got, sizeof(got)), (int)strlen(want));
		assert_string_equal(got, want);
		assert_int_equal(agent_rsh_key_text(k, 29412, got, 20), -ENOSPC);
	}
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(agent_rsh_key_load(path, &key, err, sizeof(err)), 0);
	assert_memory_equal(key.k, k, RSH_KEY_LEN);
	assert_int_equal(key.port, 29412);
	/* malformed: short key, bad port, missing key */
	f = fopen(path, "w");
	fputs("key=abcd\nport=29412\n", f);
	fclose(f);
	assert_int_equal(agent_rsh_key_load(path, &key, err, sizeof(err)), GX_EUSAGE);
	f = fopen(path, "w");
	fprintf(f, "key=%064d\nport=70000\n", 0);
	fclose(f);
	assert_int_equal(agent_rsh_key_load(path, &key, err, sizeof(err)), GX_EUSAGE);
	f = fopen(path, "w");
	fputs("port=29412\n", f);
	fclose(f);
	assert_int_equal(agent_rsh_key_load(path, &key, err, sizeof(err)), GX_EUSAGE);
	unlink(path);
	assert_int_equal(agent_rsh_key_load(path, &key, err, sizeof(err)), -ENOENT);
	rmdir(dir);
}

static void test_proofs(void **state)
{
	unsigned char k[RSH_KEY_LEN] = {1}, nc[RSH_NONCE_LEN] = {2}, ns[RSH_NONCE_LEN] = {3};
	unsigned char pc[32], ps[32], c2s[32], s2c[32], pc2[32];

	(void)state;
	agent_rsh_proof(k, 'C', nc, ns, pc);
	agent_rsh_proof(k, 'S', nc, ns, ps);
	assert_memory_not_equal(pc, ps, 32); /* a server's proof is no client proof */
	agent_rsh_stream_keys(k, nc, ns, c2s, s2c);
	assert_memory_not_equal(c2s, s2c, 32);
	assert_memory_not_equal(c2s, pc, 32);
	ns[0] ^= 1;
	agent_rsh_proof(k, 'C', nc, ns, pc2);
	assert_memory_not_equal(pc, pc2, 32); /* fresh server nonce: no replay */
}

/* Two connected ends with their streams up, as after the handshake. */
static void pair(struct rsh_conn *a, struct rsh_conn *b)
{
	unsigned char c2s[32], s2c[32], ha[RSH_HDR_LEN], hb[RSH_HDR_LEN];
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	agent_rsh_conn_init(a, sv[0]);
	agent_rsh_conn_init(b, sv[1]);
	randombytes_buf(c2s, sizeof(c2s));
	randombytes_buf(s2c, sizeof(s2c));
	assert_int_equal(agent_rsh_conn_push_init(a, c2s, ha), 0);
	assert_int_equal(agent_rsh_conn_push_init(b, s2c, hb), 0);
	assert_int_equal(agent_rsh_conn_pull_init(a, s2c, hb), 0);
	assert_int_equal(agent_rsh_conn_pull_init(b, c2s, ha), 0);
}

static void test_frames(void **state)
{
	unsigned char *buf = malloc(RSH_MAX_PLAIN), *big = calloc(1, RSH_MAX_PLAIN);
	struct rsh_conn a, b;
	uint8_t type;
	size_t len;

	(void)state;
	pair(&a, &b);
	assert_int_equal(agent_rsh_conn_send(&a, RSH_EXEC, "echo hi", 7), 0);
	assert_int_equal(agent_rsh_conn_send(&a, RSH_STDIN_EOF, NULL, 0), 0);
	assert_int_equal(agent_rsh_conn_next(&b, &type, buf, &len), 1);
	assert_int_equal(type, RSH_EXEC);
	assert_int_equal(len, 7);
	assert_memory_equal(buf, "echo hi", 7);
	assert_int_equal(agent_rsh_conn_next(&b, &type, buf, &len), 1);
	assert_int_equal(type, RSH_STDIN_EOF);
	assert_int_equal(len, 0);
	assert_int_equal(agent_rsh_conn_next(&b, &type, buf, &len), 0);
	/* the largest payload passes, one byte more is refused before sealing */
	assert_int_equal(agent_rsh_conn_send(&b, RSH_STDOUT, big, RSH_MAX_PLAIN - 1), 0);
	assert_int_equal(agent_rsh_conn_send(&b, RSH_STDOUT, big, RSH_MAX_PLAIN), -EINVAL);
	while (agent_rsh_conn_flush(&b) == 1 || agent_rsh_conn_next(&a, &type, buf, &len) == 0)
		;
	assert_int_equal(type, RSH_STDOUT);
	assert_int_equal(len, RSH_MAX_PLAIN - 1);
	agent_rsh_conn_free(&a);
	agent_rsh_conn_free(&b);
	free(buf);
	free(big);
}

/* Bytes as if they came from the socket: the connection reads fed input (p stays valid until
 * the next read says "not yet"). */
static void inject(struct rsh_conn *b, const unsigned char *p, size_t n)
{
	b->f.fed = 1;
	gx_frame_feed(&b->f, p, n);
}

/* One sealed frame as it goes on the wire, read off the peer's socket. */
static size_t capture(int fd, unsigned char *frame, size_t cap)
{
	ssize_t n = recv(fd, frame, cap, 0);

	assert_true(n > 4);
	return (size_t)n;
}

static void test_frames_hostile(void **state)
{
	unsigned char *buf = malloc(RSH_MAX_PLAIN), frame[256], bad[4];
	struct rsh_conn a, b;
	uint32_t n;
	size_t len, flen;
	uint8_t type;

	(void)state;
	pair(&a, &b);
	/* capture one sealed frame */
	assert_int_equal(agent_rsh_conn_send(&a, RSH_STDIN, "abc", 3), 0);
	flen = capture(b.f.fd, frame, sizeof(frame));
	assert_int_equal(flen, 4 + 1 + 3 + crypto_secretstream_xchacha20poly1305_ABYTES);
	/* partial input: nothing yet, then the rest */
	inject(&b, frame, 5);
	assert_int_equal(agent_rsh_conn_next(&b, &type, buf, &len), 0);
	inject(&b, frame + 5, flen - 5);
	assert_int_equal(agent_rsh_conn_next(&b, &type, buf, &len), 1);
	assert_int_equal(len, 3);
	/* replay of the same frame: the stream has moved on */
	inject(&b, frame, flen);
	assert_int_equal(agent_rsh_conn_next(&b, &type, buf, &len), GX_EMAC);
	agent_rsh_conn_free(&a);
	agent_rsh_conn_free(&b);
	/* a flipped bit */
	pair(&a, &b);
	assert_int_equal(agent_rsh_conn_send(&a, RSH_STDIN, "abc", 3), 0);
	flen = capture(b.f.fd, frame, sizeof(frame));
	frame[flen - 1] ^= 0x40;
	inject(&b, frame, flen);
	assert_int_equal(agent_rsh_conn_next(&b, &type, buf, &len), GX_EMAC);
	agent_rsh_conn_free(&b);
	/* lengths: over the bound and under the minimum, refused at the length, before a byte
	 * of the body is read or allocated */
	agent_rsh_conn_init(&b, -1);
	b.sealed = 2;
	n = htonl(RSH_MAX_CT + 1);
	memcpy(bad, &n, 4);
	inject(&b, bad, 4);
	assert_int_equal(agent_rsh_conn_next(&b, &type, buf, &len), GX_EPROTO);
	assert_null(b.f.body);
	agent_rsh_conn_free(&b);
	agent_rsh_conn_init(&b, -1);
	b.sealed = 2;
	n = htonl(3);
	memcpy(bad, &n, 4);
	inject(&b, bad, 4);
	assert_int_equal(agent_rsh_conn_next(&b, &type, buf, &len), GX_EPROTO);
	/* no frames before the streams are up */
	agent_rsh_conn_free(&a);
	agent_rsh_conn_init(&a, -1);
	inject(&a, frame, flen);
	assert_int_equal(agent_rsh_conn_next(&a, &type, buf, &len), 0);
	assert_int_equal(a.f.inlen, flen); /* not read */
	assert_int_equal(agent_rsh_conn_send(&a, RSH_STDIN, "x", 1), -EINVAL);
	agent_rsh_conn_free(&a);
	agent_rsh_conn_free(&b);
	free(buf);
}

/* Raw handshake bytes: exactly n of them, never a byte more (the next record stays). */
static void test_take(void **state)
{
	unsigned char out[8];
	struct rsh_conn c;

	(void)state;
	agent_rsh_conn_init(&c, -1);
	inject(&c, (const unsigned char *)"GXRSH", 5);
	assert_int_equal(agent_rsh_conn_take(&c, out, 8), 0);
	inject(&c, (const unsigned char *)"1\n\0x", 4);
	assert_int_equal(agent_rsh_conn_take(&c, out, 8), 1);
	assert_memory_equal(out, RSH_MAGIC, 8);
	assert_int_equal(c.f.inlen, 1);
	agent_rsh_conn_free(&c);
}

static void test_peer_find(void **state)
{
	static const struct agent_domain dom = {"job", "default", "cluster.local"};
	struct rsh_peer p[3] = {
	    {.name = "job-worker-0", .addr = "192.168.2.10", .primary = "10.0.0.10", .slots = 8},
	    {.name = "job-worker-1.job.default.svc", .addr = "192.168.2.11", .slots = 8},
	    {.name = "job-worker-2", .addr = "fd00::12", .primary = "10.0.0.12", .slots = 8},
	};

	(void)state;
	assert_ptr_equal(agent_rsh_peer_find(p, 3, "job-worker-0", &dom), &p[0]);
	assert_ptr_equal(
	    agent_rsh_peer_find(p, 3, "JOB-WORKER-0.job.default.svc.cluster.local", &dom), &p[0]);
	assert_ptr_equal(agent_rsh_peer_find(p, 3, "job-worker-1", &dom), &p[1]);
	assert_ptr_equal(agent_rsh_peer_find(p, 3, "10.0.0.12", &dom), &p[2]);
	assert_ptr_equal(agent_rsh_peer_find(p, 3, "fd00:0::12", &dom), &p[2]);
	assert_ptr_equal(agent_rsh_peer_find(p, 3, "192.168.2.11", &dom), &p[1]);
	assert_null(agent_rsh_peer_find(p, 3, "job-worker-10", &dom));
	assert_null(agent_rsh_peer_find(p, 3, "job-worker", &dom));
	assert_null(agent_rsh_peer_find(p, 3, "10.0.0.99", &dom));
	/* another namespace's or subdomain's pod with a peer's first label is no peer */
	assert_null(agent_rsh_peer_find(p, 3, "job-worker-0.otherjob.otherns", &dom));
	assert_null(agent_rsh_peer_find(p, 3, "job-worker-1.job.otherns.svc", &dom));
	assert_null(agent_rsh_peer_find(p, 3, "job-worker-2.other", &dom));
	assert_ptr_equal(agent_rsh_peer_find(p, 3, "job-worker-2.job.default", &dom), &p[2]);
	assert_ptr_equal(agent_rsh_peer_find(p, 3, "job-worker-1.job", &dom), &p[1]);
	/* without this pod's domain only the name itself and bare siblings are known */
	assert_null(agent_rsh_peer_find(p, 3, "job-worker-0.job", NULL));
	assert_ptr_equal(agent_rsh_peer_find(p, 3, "job-worker-1.job.default.svc", NULL), &p[1]);
}

/* `gxboot rsh HOST` with HOST no peer names the rendezvous.json it searched, not the
 * fallback --out that could not be opened (mpirun's agent gets GXBOOT_RSH_KEY_FILE only). */
static void rsh_fails_with(struct agent_opts *o, const char *want, const char * not )
{
	char log[2048];
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t got;

	assert_non_null(f);
	assert_int_equal(dup2(fileno(f), STDERR_FILENO), STDERR_FILENO);
	assert_int_equal(agent_cmd_rsh(o, err, sizeof(err)), 255);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	rewind(f);
	got = fread(log, 1, sizeof(log) - 1, f);
	log[got] = '\0';
	fclose(f);
	if (!strstr(log, want) || (not &&strstr(log, not )))
		fail_msg("want \"%s\"%s%s in: %s", want, not ? ", not " : "", not ? not : "", log);
}

static void test_rsh_names_the_file(void **state)
{
	char a[] = "/tmp/gxrshaXXXXXX", b[] = "/tmp/gxrshbXXXXXX", path[128], key[128];
	char want[400], *argv[] = {"true", NULL};
	unsigned char k[RSH_KEY_LEN] = {7};
	struct agent_opts o;
	int fd, i;

	(void)state;
	assert_non_null(mkdtemp(a));
	assert_non_null(mkdtemp(b));
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/rendezvous.json", i ? b : a);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		dprintf(fd, "{\"peers\":[{\"name\":\"w-0\",\"addr4\":\"192.168.2.10\"}]}");
		close(fd);
	}
	snprintf(key, sizeof(key), "%s/rsh.key", a);
	{
		char text[RSH_KEY_TEXT_MAX];
		int n = agent_rsh_key_text(k, 29412, text, sizeof(text));

		assert_true(n > 0);
		fd = open(key, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, text, (size_t)n), n);
		close(fd);
	}
	memset(&o, 0, sizeof(o));
	o.cmd = AGENT_CMD_RSH;
	o.rsh_host = "elsewhere";
	o.argv = argv;
	o.argc = 1;
	o.out = "/nonexistent/gxboot-out";
	assert_int_equal(setenv("GXBOOT_RSH_KEY_FILE", key, 1), 0);
	snprintf(want, sizeof(want),
		 "elsewhere is not a peer of this job (not in %s/rendezvous.json)", a);
	rsh_fails_with(&o, want, "/nonexistent");
	/* both files read: both named */
	o.out = b;
	snprintf(want, sizeof(want), "(not in %s/rendezvous.json nor %s/rendezvous.json)", a, b);
	rsh_fails_with(&o, want, NULL);
	/* the credential's own file unreadable, the fallback read: the fallback is named */
	snprintf(path, sizeof(path), "%s/rendezvous.json", a);
	unlink(path);
	snprintf(want, sizeof(want), "(not in %s/rendezvous.json)", b);
	rsh_fails_with(&o, want, NULL);
	unsetenv("GXBOOT_RSH_KEY_FILE");
	unlink(key);
	snprintf(path, sizeof(path), "%s/rendezvous.json", b);
	unlink(path);
	rmdir(a);
	rmdir(b);
}

static void test_peers_load(void **state)
{
	char path[] = "/tmp/gxrshjXXXXXX";
	struct rsh_peer *p = NULL;
	size_t n = 0;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	dprintf(fd,
		"{\"rank\":0,\"peers\":[{\"rank\":0,\"name\":\"w-0\",\"addr4\":\"192.168.2.10\","
		"\"slots\":4,\"serves\":true},{\"rank\":1,\"name\":\"w-1\",\"addr6\":\"fd00::1\","
		"\"slots\":0}]}");
	close(fd);
	assert_int_equal(agent_rsh_peers_load(path, &p, &n, NULL, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(p[0].addr, "192.168.2.10");
	assert_int_equal(p[0].slots, 4);
	assert_true(p[0].serves);
	assert_string_equal(p[1].addr, "fd00::1");
	assert_int_equal(p[1].slots, 1);
	free(p);
	fd = open(path, O_WRONLY | O_TRUNC);
	dprintf(fd, "{\"peers\":[{\"name\":\"w-0\",\"addr4\":\"192.168.2.10; rm -rf /\"}]}");
	close(fd);
	assert_int_equal(agent_rsh_peers_load(path, &p, &n, NULL, err, sizeof(err)), GX_EUSAGE);
	assert_null(p);
	unlink(path);
	assert_int_equal(agent_rsh_peers_load(path, &p, &n, NULL, err, sizeof(err)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_join),
	    cmocka_unit_test(test_key_file),
	    cmocka_unit_test(test_proofs),
	    cmocka_unit_test(test_frames),
	    cmocka_unit_test(test_frames_hostile),
	    cmocka_unit_test(test_take),
	    cmocka_unit_test(test_peer_find),
	    cmocka_unit_test(test_peers_load),
	    cmocka_unit_test(test_rsh_names_the_file),
	};

	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
