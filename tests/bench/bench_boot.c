/* SPDX-License-Identifier: MIT */
/*
 * bench_boot.c - how fast one `gxboot init` member reaches the network: from its execve to
 * its first packet at the coordinator, and from a late DNS record to its connect.
 * The bench owns the coordinator's listening socket (127.0.9.1, a free port) and
 * starts a member gxboot (127.0.9.2, --iface lo) with fork + execve; timestamps are
 * CLOCK_MONOTONIC, the child's taken just before execve (shared page).
 *
 *   bench_boot first GXBOOT TOKEN OUTDIR
 *       exec -> first packet: prints exec_to_accept_us (the member's SYN was
 *       answered and accepted) and exec_to_byte_us (its first bytes arrived).
 *   bench_boot dns GXBOOT TOKEN OUTDIR DNSPORT HOSTS DNSMASQ_PID DELAY_MS NAME
 *       the coordinator's NAME is NXDOMAIN at the dnsmasq on 127.0.0.1:DNSPORT
 *       (HOSTS is its addn-hosts file) for DELAY_MS after exec; then the record is
 *       written and dnsmasq gets SIGHUP. Prints visible_us (SIGHUP -> our own
 *       c-ares lookup answers, measured on the side) and lag_us (SIGHUP -> the
 *       member's connect accepted: its resolution completed and it connected).
 * Exit 0 with one line "key=value ..." on stdout, 1 with one line on stderr.
 */
#include "agent/peers/dns_int.h"
#include "rdzv/gx/gx.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COORD_IP "127.0.9.1"
#define SELF_IP "127.0.9.2"
#define WAIT_MS 20000

struct boot {
	const char *gxboot, *token, *outdir, *dns; /* dns: "127.0.0.1:PORT" or NULL */
	const char *coord;			   /* the coordinator's peer entry */
	uint16_t port;
	int lfd;
	pid_t pid;
	int64_t *exec_us; /* shared with the child */
};

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int listen_coord(struct boot *b)
{
	union gx_sockaddr sa;
	socklen_t len = sizeof(sa);
	int rc;

	if (gx_addr_parse(COORD_IP, 0, &sa, &len) < 0)
		return -EINVAL;
	rc = gx_tcp_listen(&sa, len, &b->lfd);
	len = sizeof(sa);
	if (rc == 0 && getsockname(b->lfd, &sa.sa, &len) < 0)
		rc = -errno;
	if (rc == 0)
		b->port = ntohs(sa.in4.sin_port);
	return rc;
}

static void child(const struct boot *b)
{
	char peers[300], port[16], dns[64];
	char *argv[24];
	int i = 0, fd = open("/dev/null", O_WRONLY);

	snprintf(peers, sizeof(peers), "%s,%s", b->coord, SELF_IP);
	snprintf(port, sizeof(port), "%u", b->port);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	argv[i++] = (char *)b->gxboot;
	argv[i++] = "init";
	argv[i++] = "--peers";
	argv[i++] = peers;
	argv[i++] = "--self";
	argv[i++] = SELF_IP;
	argv[i++] = "--iface";
	argv[i++] = "lo";
	argv[i++] = "--port";
	argv[i++] = port;
	argv[i++] = "--timeout";
	argv[i++] = "30";
	argv[i++] = "--token-file";
	argv[i++] = (char *)b->token;
	argv[i++] = "--out";
	argv[i++] = (char *)b->outdir;
	argv[i++] = "-q";
	if (b->dns) {
		snprintf(dns, sizeof(dns), "%s", b->dns);
		argv[i++] = "--dns-server";
		argv[i++] = dns;
	}
	argv[i] = NULL;
	*b->exec_us = mono_us();
	execv(b->gxboot, argv);
	_exit(127);
}

/* Wait up to ms for a connection; 0 with its time, -ETIMEDOUT, -errno. */
static int wait_accept(struct boot *b, int ms, int *cfd, int64_t *t_us)
{
	struct pollfd p = {.fd = b->lfd, .events = POLLIN};
	int n = poll(&p, 1, ms);

	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	*cfd = accept4(b->lfd, NULL, NULL, SOCK_CLOEXEC);
	*t_us = mono_us();
	return *cfd < 0 ? -errno : 0;
}

static int64_t wait_byte(int cfd)
{
	struct pollfd p = {.fd = cfd, .events = POLLIN};
	char c;

	if (poll(&p, 1, WAIT_MS) != 1 || recv(cfd, &c, 1, MSG_PEEK) != 1)
		return -1;
	return mono_us();
}

static int start(struct boot *b)
{
	b->pid = fork();
	if (b->pid < 0)
		return -errno;
	if (b->pid == 0)
		child(b);
	return 0;
}

static void stop(struct boot *b)
{
	int st;

	if (b->pid > 0) {
		kill(b->pid, SIGKILL);
		waitpid(b->pid, &st, 0);
	}
	b->pid = -1;
	if (b->lfd >= 0)
		close(b->lfd);
	b->lfd = -1;
}

static int run_first(struct boot *b)
{
	int64_t t_acc = 0, t_byte;
	int cfd = -1, rc;

	rc = start(b);
	if (rc == 0)
		rc = wait_accept(b, WAIT_MS, &cfd, &t_acc);
	if (rc < 0) {
		fprintf(stderr, "bench_boot first: no connection: %s\n", strerror(-rc));
		goto out;
	}
	t_byte = wait_byte(cfd);
	printf("exec_to_accept_us=%lld exec_to_byte_us=%lld\n", (long long)(t_acc - *b->exec_us),
	       (long long)(t_byte < 0 ? -1 : t_byte - *b->exec_us));
out:
	if (cfd >= 0)
		close(cfd);
	return rc < 0 ? 1 : 0;
}

static int write_hosts(const char *path, const char *line)
{
	char tmp[600];
	FILE *f;
	int rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (fputs(line, f) < 0)
		rc = -EIO;
	if (fclose(f) != 0 || rc < 0 || rename(tmp, path) < 0)
		return -EIO;
	return 0;
}

/* One lookup in a loop of its own (the bench waits for nothing else). */
struct dns_wait {
	struct gx_ev *ev;
	struct agent_dns_answer *ans;
	int rc, done;
};

static void wait_done(void *arg, int rc, const struct agent_dns_answer *ans)
{
	struct dns_wait *w = arg;

	*w->ans = *ans;
	w->rc = rc;
	w->done = 1;
	gx_ev_stop(w->ev, 0);
}

static int dns_lookup(const char *name, const char *dns_server, uint16_t port, int64_t deadline_ms,
		      struct agent_dns_answer *ans)
{
	struct dns_wait w = {.ans = ans, .rc = -ETIMEDOUT};
	struct agent_dns *d = NULL;
	struct gx_ev *ev = NULL;
	int rc;

	memset(ans, 0, sizeof(*ans));
	rc = gx_ev_new(&ev);
	w.ev = ev;
	if (rc == 0)
		rc = agent_dns_start(ev, name, dns_server, port, wait_done, &w, &d);
	if (rc == 0)
		rc = gx_ev_run_until(ev, deadline_ms);
	if (rc == 0)
		rc = w.done ? w.rc : -ETIMEDOUT;
	agent_dns_free(d);
	gx_ev_free(ev);
	return rc;
}

/* SIGHUP -> our own lookup answers (want: 1 = an address, 0 = NXDOMAIN), in us. */
static int64_t visible_us(const char *name, const char *dns, int want)
{
	struct agent_dns_answer ans;
	int64_t t0 = mono_us();
	int rc;

	do {
		rc = dns_lookup(name, dns, 1, gx_now_ms() + 1000, &ans);
		if ((want && rc == 0) || (!want && rc == -ENOENT))
			return mono_us() - t0;
	} while (mono_us() - t0 < 5000000);
	return -1;
}

static int publish(const char *hosts, pid_t dnsmasq, const char *line, int64_t *t_us)
{
	int rc = write_hosts(hosts, line);

	if (rc == 0 && kill(dnsmasq, SIGHUP) < 0)
		rc = -errno;
	*t_us = mono_us();
	return rc;
}

static int run_dns(struct boot *b, char **argv)
{
	const char *hosts = argv[0], *name = argv[3];
	pid_t dnsmasq = (pid_t)strtol(argv[1], NULL, 10);
	int delay = (int)strtol(argv[2], NULL, 10), cfd = -1, rc;
	int64_t t_pub = 0, t_acc = 0, vis, vis_end;
	char line[300];

	snprintf(line, sizeof(line), "%s %s\n", COORD_IP, name);
	/* the record's own visibility delay, then back to NXDOMAIN */
	rc = publish(hosts, dnsmasq, line, &t_pub);
	vis = rc == 0 ? visible_us(name, b->dns, 1) : -1;
	rc = rc == 0 ? publish(hosts, dnsmasq, "", &t_pub) : rc;
	if (rc < 0 || vis < 0 || visible_us(name, b->dns, 0) < 0) {
		fprintf(stderr, "bench_boot dns: dnsmasq did not follow SIGHUP\n");
		return 1;
	}
	rc = start(b);
	if (rc == 0 && wait_accept(b, delay, &cfd, &t_acc) != -ETIMEDOUT)
		rc = -EEXIST; /* resolved before the record existed */
	if (rc == 0)
		rc = publish(hosts, dnsmasq, line, &t_pub);
	if (rc == 0)
		rc = wait_accept(b, WAIT_MS, &cfd, &t_acc);
	publish(hosts, dnsmasq, "", &vis_end);
	if (cfd >= 0)
		close(cfd);
	if (rc < 0) {
		fprintf(stderr, "bench_boot dns: %s\n", strerror(-rc));
		return 1;
	}
	printf("delay_ms=%d visible_us=%lld lag_us=%lld\n", delay, (long long)vis,
	       (long long)(t_acc - t_pub));
	return 0;
}

int main(int argc, char **argv)
{
	struct boot b = {.lfd = -1, .pid = -1, .coord = COORD_IP};
	char dns[64];
	int rc = 2;

	if (argc < 5 || (strcmp(argv[1], "dns") == 0 && argc < 10)) {
		fprintf(stderr, "usage: bench_boot first|dns GXBOOT TOKEN OUTDIR [DNSPORT HOSTS "
				"DNSMASQ_PID DELAY_MS NAME]\n");
		return 2;
	}
	b.gxboot = argv[2];
	b.token = argv[3];
	b.outdir = argv[4];
	b.exec_us =
	    mmap(NULL, sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (b.exec_us == MAP_FAILED || listen_coord(&b) < 0) {
		fprintf(stderr, "bench_boot: cannot listen on %s\n", COORD_IP);
		return 1;
	}
	if (strcmp(argv[1], "first") == 0) {
		rc = run_first(&b);
	} else if (strcmp(argv[1], "dns") == 0) {
		snprintf(dns, sizeof(dns), "127.0.0.1:%s", argv[5]);
		b.dns = dns;
		b.coord = argv[9];
		rc = run_dns(&b, argv + 6);
	}
	stop(&b);
	return rc;
}
