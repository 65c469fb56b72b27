/* SPDX-License-Identifier: MIT */
/* gx_sock.c - TCP socket helpers after redis anet.c: every fd CLOEXEC + NONBLOCK. */
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int gx_addr_parse(const char *str, uint16_t port, union gx_sockaddr *sa, socklen_t *len)
{
	char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 4];
	char *pct;
	size_t n;

	if (!str)
		return -EINVAL;
	n = strnlen(str, sizeof(buf));
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	if (str[0] == '[' && str[n - 1] == ']') {
		memcpy(buf, str + 1, n - 2);
		buf[n - 2] = '\0';
	} else {
		memcpy(buf, str, n + 1);
	}
	memset(sa, 0, sizeof(*sa));
	if (inet_pton(AF_INET, buf, &sa->in4.sin_addr) == 1) {
		sa->in4.sin_family = AF_INET;
		sa->in4.sin_port = htons(port);
		*len = sizeof(sa->in4);
		return 0;
	}
	pct = strchr(buf, '%');
	if (pct) {
		*pct++ = '\0';
		sa->in6.sin6_scope_id = if_nametoindex(pct);
		if (sa->in6.sin6_scope_id == 0)
			return -EINVAL;
	}
	if (inet_pton(AF_INET6, buf, &sa->in6.sin6_addr) == 1) {
		sa->in6.sin6_family = AF_INET6;
		sa->in6.sin6_port = htons(port);
		*len = sizeof(sa->in6);
		return 0;
	}
	return -EINVAL;
}

const char *gx_addr_str(const union gx_sockaddr *sa, char *buf, size_t len)
{
	const void *src = sa->sa.sa_family == AF_INET ? (const void *)&sa->in4.sin_addr
						      : (const void *)&sa->in6.sin6_addr;

	if ((sa->sa.sa_family != AF_INET && sa->sa.sa_family != AF_INET6) ||
	    !inet_ntop(sa->sa.sa_family, src, buf, (socklen_t)len))
		gx_strlcpy(buf, "?", len);
	return buf;
}

int gx_addr_normalize(const char *in, char *out, size_t outlen)
{
	unsigned char bin[16];
	int af;

	if (!in || strnlen(in, INET6_ADDRSTRLEN) >= INET6_ADDRSTRLEN)
		return -EINVAL;
	af = strchr(in, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(af, in, bin) != 1)
		return -EINVAL;
	if (!inet_ntop(af, bin, out, (socklen_t)outlen))
		return -ENOSPC;
	return 0;
}

int gx_somaxconn(void)
{
	char buf[32] = "";
	long v = 0;
	int fd, n;

	fd = open("/proc/sys/net/core/somaxconn", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 4096;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 4096;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (gx_parse_long(buf, 1, 1 << 30, &v) < 0)
		return 4096;
	return (int)v;
}

/* SO_BINDTODEVICE: unprivileged since Linux 5.7; before that it needs CAP_NET_RAW (-EPERM). */
int gx_bind_device(int fd, const char *ifname)
{
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname)) < 0)
		return -errno;
	return 0;
}

int gx_tcp_listen_opt(const union gx_sockaddr *sa, socklen_t len, const char *ifname, int flags,
		      int *fd_out)
{
	int fd = -1, one = 1, err = 0;

	fd = socket(sa->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (ifname && ifname[0]) {
		err = gx_bind_device(fd, ifname);
		if (err < 0)
			goto out;
	}
	/* a listener in TIME_WAIT's way would turn a restart into "port in use"; and a
	 * v6 listener that silently stayed dual-stack would take the v4 port too.
	 * GX_LISTEN_SHARED: a wildcard listener and one bound to a device and address may
	 * share a port only when both have SO_REUSEPORT (the kernel's bind conflict rule);
	 * each stays in its own group, and a connection goes to the one that matches best */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    ((flags & GX_LISTEN_SHARED) &&
	     setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) ||
	    (sa->sa.sa_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, &sa->sa, len) < 0 || listen(fd, gx_somaxconn()) < 0) {
		err = -errno;
		goto out;
	}
	*fd_out = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	return err;
}

int gx_tcp_listen(const union gx_sockaddr *sa, socklen_t len, int *fd_out)
{
	return gx_tcp_listen_opt(sa, len, NULL, 0, fd_out);
}

int gx_tcp_listen_secondary(const char *addr4, const char *addr6, uint16_t port, const char *ifname,
			    int fds[2], int *why)
{
	const char *addrs[2] = {addr4, addr6};
	union gx_sockaddr sa;
	socklen_t len;
	int i, n = 0, rc = 0;

	fds[0] = fds[1] = -1;
	*why = 0;
	for (i = 0; i < 2 && rc == 0; i++) {
		if (!addrs[i] || !addrs[i][0])
			continue;
		rc = gx_addr_parse(addrs[i], port, &sa, &len);
		if (rc == 0)
			rc = gx_tcp_listen_opt(&sa, len, ifname, GX_LISTEN_SHARED, &fds[i]);
		n += rc == 0;
	}
	if (rc == 0)
		return n;
	for (i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
	if (rc == -EPERM || rc == -ENODEV || rc == -ENOPROTOOPT) {
		*why = rc;
		return 0;
	}
	return rc;
}

int gx_tcp_connect_dev(const union gx_sockaddr *dst, socklen_t dlen, const union gx_sockaddr *src,
		       socklen_t slen, const char *ifname, int *fd_out)
{
	int fd = -1, one = 1, err = 0;

	fd = socket(dst->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	/* latency only: a socket without it still works */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* the device, not only the source address: Linux is a weak-host kernel, and a
	 * socket bound to an address alone leaves through whatever its route says */
	if (ifname && ifname[0]) {
		err = gx_bind_device(fd, ifname);
		if (err < 0)
			goto out;
	}
	/* a bound source takes its port at connect() by 4-tuple: many gxboots in one netns
	 * (hostNetwork, benchmarks) do not run out of ephemeral ports; a kernel without it
	 * (< 4.2) binds a port at bind() as before */
	if (src)
		(void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	if (src && bind(fd, &src->sa, slen) < 0) {
		err = -errno;
		goto out;
	}
	if (connect(fd, &dst->sa, dlen) < 0 && errno != EINPROGRESS) {
		err = -errno;
		goto out;
	}
	*fd_out = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	return err;
}

int gx_tcp_connect(const union gx_sockaddr *dst, socklen_t dlen, const union gx_sockaddr *src,
		   socklen_t slen, int *fd_out)
{
	return gx_tcp_connect_dev(dst, dlen, src, slen, NULL, fd_out);
}

int gx_sock_error(int fd)
{
	int e = 0;
	socklen_t l = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
		return -errno;
	return -e;
}

long gx_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return -errno;
	}
	return (long)rl.rlim_cur;
}
