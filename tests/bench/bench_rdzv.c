/* SPDX-License-Identifier: MIT */
/*
 * bench_rdzv.c - the real coordinator as its own process against N-1 members
 * driven by the real member code in P processes (one epoll loop each), on
 * loopback; members' "secondary" addresses are 127.0.x.y (run.sh sections (b), (g)).
 *
 *   bench_rdzv N [P [F]]  prints: N, latency ms after the last member started until
 *                      every member holds rank + MASTER_ADDR (COMMIT), the
 *                      coordinator's peak RSS, and each member process's peak RSS.
 *                      F > 1: the relay tree (past 8,192 pods), member i joins through peer
 *                      (i / F) * F, which listens on its own 127.x.y.z; the line adds
 *                      the coordinator's peak open connections and relays.
 *
 * A member process starts its members in batches of START_BATCH from a 0 ms timer,
 * so the members already connected are served between batches, as real pods (one
 * gxboot each) serve their own connection at once. Starting all 8192 of a process
 * before entering the loop left the first connections unanswered for seconds: the
 * coordinator's 5 s handshake deadline closed them and the retries snowballed (the
 * 37 s N=16384 runs, tests/bench notes). start_ms = the longest start phase.
 */
#include "rdzv/rdzv.h"

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdint.h>
#include <unistd.h>

static const unsigned char TOKEN[] = "bench-token-0123456789abcdef";

#define START_BATCH 64

struct shared {
	int64_t begin_us[64];	/* wall clock: when a member process began starting */
	int64_t started_us[64]; /* wall clock: when a member process had started all */
	int64_t done_us[64];	/* wall clock: when its last member got COMMIT */
	long rss_kb[65];	/* [0..P-1] member processes, [64] coordinator */
	int64_t coord_cpu_us;	/* the coordinator's user + system CPU time */
	int failed;
	uint32_t tickets; /* phase-2 VERIFYs that came with a ticket (no second handshake) */
	/* members whose phase 1 failed before they joined, by the last failure: closed or
	 * reset, timed out (their own deadline), anything else; the coordinator's closes at a
	 * handshake deadline and evictions at its connection bound */
	int retry_reset, retry_timeout, retry_other;
	uint32_t hs_late, evicted, slow;
	uint32_t relays, carried, relays_lost, via_relay;
	long coord_fds; /* the coordinator's open descriptors, peak (sampled every 50 ms) */
};

static uint32_t fanout;	    /* F (argv[3]), 0: the star */
static uint16_t bench_port; /* the coordinator's and every relay's port */

struct mstate {
	int *left;
	int *failed;
	struct shared *sh;
	struct gx_ev *ev;
	uint32_t tickets; /* coordinator: rdzv_result.ntickets */
};

/* a member process's start phase: members next, next + nproc, ... < n */
struct starter {
	char **names;
	struct rdzv_member **ms;
	struct mstate *s;
	struct shared *sh;
	uint32_t n, next, stride, end;
	uint16_t port;
	int p, nproc, err;
};

static long peak_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

static void member_done(void *arg, int rc, const struct rdzv_result *res)
{
	struct mstate *s = arg;

	if (rc != 0)
		(*s->failed)++;
	if (res->via_relay && s->sh)
		__atomic_fetch_add(&s->sh->via_relay, 1, __ATOMIC_SEQ_CST);
	if (res->conn_err && s->sh)
		__atomic_fetch_add(res->conn_err == -ECONNRESET	 ? &s->sh->retry_reset
				   : res->conn_err == -ETIMEDOUT ? &s->sh->retry_timeout
								 : &s->sh->retry_other,
				   1, __ATOMIC_SEQ_CST);
	if (--*s->left == 0)
		gx_ev_stop(s->ev, 0);
}

static void coord_done(void *arg, int rc, const struct rdzv_result *res)
{
	struct mstate *s = arg;

	s->tickets = res->ntickets;
	if (s->sh) {
		s->sh->hs_late = res->nhs_late;
		s->sh->evicted = res->nevicted;
		s->sh->slow = res->nslow;
		s->sh->relays = res->nrelays;
		s->sh->carried = res->ncarried;
		s->sh->relays_lost = res->nrelays_lost;
	}
	if (rc != 0)
		(*s->failed)++;
	gx_ev_stop(s->ev, 0);
}

static void addr_of(uint32_t i, char *out, size_t len)
{
	snprintf(out, len, "127.%u.%u.%u", 1 + ((i >> 16) & 0x3f), (i >> 8) & 0xff,
		 1 + (i & 0xff) % 254);
}

/* the relay's own address, from its index */
static int relay_resolve(void *arg, uint32_t relay, union gx_sockaddr *sa, socklen_t *len)
{
	char ip[32];

	(void)arg;
	addr_of(relay, ip, sizeof(ip));
	return gx_addr_parse(ip, bench_port, sa, len);
}

/* the coordinator's open descriptors, counted by the parent: the count is not part of the
 * coordinator's CPU (sampled in its own loop, the /proc walk was 5-7% of it at N=16384) */
static long open_fds(pid_t pid)
{
	char path[48];
	DIR *d;
	long n = -2; /* "." and ".." */

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return d ? n : 0;
}

static void base_cfg(struct rdzv_config *c, char **names, uint32_t n, uint16_t port)
{
	memset(c, 0, sizeof(*c));
	c->world = n;
	c->names = names;
	c->job_id = "bench";
	c->token = TOKEN;
	c->token_len = sizeof(TOKEN) - 1;
	c->port = port;
	c->coord_name = names[0];
	c->deadline_ms = gx_now_ms() + 60000;
	gx_addr_parse("127.0.0.1", port, &c->coord_addr, &c->coord_addrlen);
	snprintf(c->self.iface, sizeof(c->self.iface), "lo");
	c->self.slots = 1;
	c->self.gid_index = -1;
	c->relay_fanout = fanout;
}

static int run_coord(char **names, uint32_t n, uint16_t port, struct shared *sh)
{
	struct rdzv_config c;
	struct rdzv_coord *co = NULL;
	struct gx_ev *ev = NULL;
	int left = 1, failed = 0;
	struct mstate s = {&left, &failed, sh, NULL, 0};
	struct rusage ru;

	gx_raise_nofile();
	if (gx_ev_new(&ev) < 0)
		return 1;
	s.ev = ev;
	base_cfg(&c, names, n, port);
	c.is_coordinator = 1;
	snprintf(c.self.name, sizeof(c.self.name), "%s", names[0]);
	snprintf(c.self.addr4, sizeof(c.self.addr4), "127.0.0.1");
	gx_addr_parse("127.0.0.1", 0, &c.listen_addr, &c.listen_addrlen);
	if (rdzv_coord_start(ev, &c, coord_done, &s, &co) < 0)
		return 1;
	gx_ev_run_until(ev, c.deadline_ms);
	sh->rss_kb[64] = peak_rss_kb();
	sh->tickets = s.tickets;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		sh->coord_cpu_us = (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
				   ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	__atomic_fetch_add(&sh->failed, failed, __ATOMIC_SEQ_CST);
	rdzv_coord_free(co);
	gx_ev_free(ev);
	return failed ? 1 : 0;
}

static int start_one(struct starter *st, uint32_t i)
{
	struct rdzv_config c;

	base_cfg(&c, st->names, st->n, st->port);
	c.self.index = i;
	snprintf(c.self.name, sizeof(c.self.name), "%s", st->names[i]);
	randombytes_buf(&c.self.incarnation, sizeof(c.self.incarnation));
	addr_of(i, c.self.addr4, sizeof(c.self.addr4));
	if (fanout) {
		c.relay_resolve = relay_resolve;
		gx_addr_parse(c.self.addr4, 0, &c.relay_listen, &c.relay_listen_len);
	}
	if (rdzv_member_start(st->s->ev, &c, member_done, st->s, &st->ms[i]) < 0)
		return -1;
	(*st->s->left)++;
	return 0;
}

static void start_batch(struct gx_ev *ev, uint64_t id, void *arg)
{
	struct starter *st = arg;
	int k;

	(void)id;
	for (k = 0; k < START_BATCH && st->next < st->end; k++, st->next += st->stride)
		if (start_one(st, st->next) < 0) {
			st->err = 1;
			gx_ev_stop(ev, 0);
			return;
		}
	if (st->next < st->end) {
		gx_ev_timer(ev, 0, start_batch, st);
		return;
	}
	st->sh->started_us[st->p] = gx_wall_ms() * 1000;
	if (*st->s->left == 0)
		gx_ev_stop(ev, 0);
}

static int run_members(char **names, uint32_t n, uint16_t port, int p, int nproc, struct shared *sh)
{
	struct rdzv_member **ms = calloc(n, sizeof(*ms));
	struct gx_ev *ev = NULL;
	int left = 0, failed = 0;
	struct mstate s = {&left, &failed, sh, NULL, 0};
	struct starter st = {names,	      ms, &s,	sh, n,	   1 + (uint32_t)p,
			     (uint32_t)nproc, n,  port, p,  nproc, 0};
	uint32_t i;

	if (fanout) {
		/* the tree: each process a block of whole relay groups, the relay first (all
		 * relays in one process otherwise: i = 1 + p + k * nproc, 65,280 children
		 * accepted by process nproc - 1 past its open-file limit) */
		uint32_t chunk = (n + (uint32_t)nproc - 1) / (uint32_t)nproc;

		chunk = (chunk + fanout - 1) / fanout * fanout;
		st.next = p ? (uint32_t)p * chunk : 1;
		st.end = (uint32_t)(p + 1) * chunk < n ? (uint32_t)(p + 1) * chunk : n;
		st.stride = 1;
	}

	gx_raise_nofile();
	if (!ms || gx_ev_new(&ev) < 0)
		return 1;
	s.ev = ev;
	sh->begin_us[p] = gx_wall_ms() * 1000;
	sh->started_us[p] = sh->begin_us[p];
	if (st.next < st.end && gx_ev_timer(ev, 0, start_batch, &st))
		gx_ev_run_until(ev, gx_now_ms() + 60000);
	sh->done_us[p] = gx_wall_ms() * 1000;
	/* the relays carry their children's COMMITs after their own */
	for (i = 0; i < n; i++)
		while (ms[i] && rdzv_member_relaying(ms[i]))
			gx_ev_run_until(ev, gx_now_ms() + 20);
	sh->rss_kb[p] = peak_rss_kb();
	__atomic_fetch_add(&sh->failed, failed + left + st.err, __ATOMIC_SEQ_CST);
	for (i = 0; i < n; i++)
		rdzv_member_free(ms[i]);
	free(ms);
	gx_ev_free(ev);
	return 0;
}

static uint16_t pick_port(void)
{
	union gx_sockaddr sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint16_t port = 0;

	memset(&sa, 0, sizeof(sa));
	sa.in4.sin_family = AF_INET;
	sa.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, &sa.sa, sizeof(sa.in4)) == 0 && getsockname(fd, &sa.sa, &len) == 0)
		port = ntohs(sa.in4.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static void report(uint32_t n, int nproc, const struct shared *sh)
{
	int64_t last_start = 0, last_done = 0, start_us = 0;
	long mrss = 0;
	int p;

	for (p = 0; p < nproc; p++) {
		if (sh->started_us[p] - sh->begin_us[p] > start_us)
			start_us = sh->started_us[p] - sh->begin_us[p];
		if (sh->started_us[p] > last_start)
			last_start = sh->started_us[p];
		if (sh->done_us[p] > last_done)
			last_done = sh->done_us[p];
		if (sh->rss_kb[p] > mrss)
			mrss = sh->rss_kb[p];
	}
	printf("N=%u member_procs=%d latency_ms=%.1f coord_peak_rss_kb=%ld "
	       "member_proc_peak_rss_kb=%ld (%u members each) start_ms=%.0f coord_cpu_ms=%.0f "
	       "tickets=%u failed=%d retried=reset:%d,timeout:%d,other:%d coord_hs_late=%u "
	       "coord_evicted=%u coord_slow_spared=%u",
	       n, nproc, (double)(last_done - last_start) / 1000.0, sh->rss_kb[64], mrss,
	       (n - 1 + (uint32_t)nproc - 1) / (uint32_t)nproc, (double)start_us / 1000.0,
	       (double)sh->coord_cpu_us / 1000.0, sh->tickets, sh->failed, sh->retry_reset,
	       sh->retry_timeout, sh->retry_other, sh->hs_late, sh->evicted, sh->slow);
	if (fanout)
		printf(" fanout=%u relays=%u carried=%u via_relay=%u relays_lost=%u "
		       "coord_peak_fds=%ld",
		       fanout, sh->relays, sh->carried, sh->via_relay, sh->relays_lost,
		       sh->coord_fds);
	printf("\n");
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1024;
	int nproc = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 2, p, st, bad = 0;
	struct shared *sh;
	char **names;
	uint16_t port = pick_port();
	pid_t coord, kids[64], w = 0;

	bench_port = port;
	fanout = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 0;
	long i;

	if (n < 2 || n > 100000 || nproc < 1 || nproc > 64 || sodium_init() < 0 || !port)
		return 2;
	if (getenv("BENCH_DEBUG")) /* every process's debug lines on stderr (why a member
				      reconnects) */
		gx_log_set_level(GX_LOG_DEBUG);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	names = calloc((size_t)n, sizeof(*names));
	if (sh == MAP_FAILED || !names)
		return 1;
	for (i = 0; i < n; i++) {
		names[i] = malloc(32);
		snprintf(names[i], 32, "job-worker-%ld", i);
	}
	coord = fork();
	if (coord == 0)
		_exit(run_coord(names, (uint32_t)n, port, sh));
	usleep(200000); /* let it listen; members would retry anyway */
	for (p = 0; p < nproc; p++) {
		kids[p] = fork();
		if (kids[p] == 0)
			_exit(run_members(names, (uint32_t)n, port, p, nproc, sh));
	}
	/* every 50 ms until the coordinator exits: its peak open descriptors */
	while (fanout && (w = waitpid(coord, &st, WNOHANG)) == 0) {
		long fds = open_fds(coord);

		if (fds > sh->coord_fds)
			sh->coord_fds = fds;
		usleep(50000);
	}
	if (!fanout)
		w = waitpid(coord, &st, 0);
	if (w < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		bad = 1;
	for (p = 0; p < nproc; p++)
		if (waitpid(kids[p], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	report((uint32_t)n, nproc, sh);
	return bad || sh->failed;
}
