/* SPDX-License-Identifier: MIT */
/* gx_util.c - error texts, logging, clocks, bounded strings, validators. */
#include "rdzv/gx/gx.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *gx_code_text(enum gx_err e)
{
	switch (e) {
	case GX_EBASE:
	case GX_ELAST:
		return "unknown gxboot error";
	case GX_EUSAGE:
		return "bad usage or configuration";
	case GX_EPEERS:
		return "peers not all present before the timeout";
	case GX_ENOSECONDARY:
		return "no usable secondary interface";
	case GX_ERDZV:
		return "rendezvous failed";
	case GX_EAUTH:
		return "authentication failed";
	case GX_ECONFLICT:
		return "conflicting peers";
	case GX_EVERSION:
		return "protocol version mismatch";
	case GX_EPROTO:
		return "malformed message";
	case GX_EMAC:
		return "message authentication or sequence check failed";
	case GX_EJOB:
		return "job id mismatch";
	case GX_EINVAL_NAME:
		return "invalid name or address";
	case GX_ENORDMA:
		return "RDMA required but not usable";
	case GX_ENETLINK:
		return "netlink failure";
	case GX_EJSON:
		return "malformed JSON";
	case GX_EDNS:
		return "DNS lookup failed";
	case GX_EREJECTED:
		return "rejected by the coordinator";
	case GX_EABORTED:
		return "aborted by the coordinator";
	case GX_ECHECK:
		return "some pair is unreachable";
	case GX_ECMDNOTFOUND:
		return "command not found";
	case GX_ECMDEXEC:
		return "command cannot be executed";
	case GX_EROUTE:
		return "the kernel routes the secondary path through another interface";
	case GX_EFABRIC:
		return "the job does not run on the expected fabric";
	case GX_EPREFLIGHT:
		return "the preflight named another pod: the job did not start";
	case GX_ELEFTOUT:
		return "the preflight left this pod out";
	}
	return "unknown gxboot error";
}

const char *gx_strerror(int err)
{
	if (err == 0)
		return "success";
	if (err <= -GX_EBASE && err > GX_ELAST)
		return gx_code_text((enum gx_err)err);
	if (err < 0 && err > -GX_EBASE)
		return strerror(-err);
	return "unknown error";
}

int gx_exit_code(int err)
{
	switch (err) {
	case 0:
		return 0;
	case GX_EUSAGE:
	case GX_EINVAL_NAME:
	case GX_EJSON:
		return 2;
	case GX_EPEERS:
		return 3;
	case GX_ENOSECONDARY:
	case GX_ENORDMA:
		return 4;
	case GX_ECHECK:
		return 1;
	case GX_ECMDNOTFOUND:
		return 127;
	case GX_ECMDEXEC:
		return 126;
	case GX_EFABRIC:
		return 6;
	case GX_EPREFLIGHT:
		return 7;
	case GX_ELEFTOUT:
		return 8;
	default:
		return 5;
	}
}

/* ---- logging ---- */
static const char *level_name(int level)
{
	switch (level) {
	case GX_LOG_ERROR:
		return "error";
	case GX_LOG_WARN:
		return "warning";
	case GX_LOG_INFO:
		return "info";
	case GX_LOG_DEBUG:
		return "debug";
	default:
		return "trace";
	}
}

/* Logging is process-wide by nature, like c-ares's library state: one level. */
static int log_level = GX_LOG_INFO;

void gx_log_set_level(int level)
{
	log_level = level < GX_LOG_ERROR   ? GX_LOG_ERROR
		    : level > GX_LOG_TRACE ? GX_LOG_TRACE
					   : level;
}

int gx_log_get_level(void)
{
	return log_level;
}

void gx_vlog(int level, const char *fmt, va_list ap)
{
	char msg[2048];
	char ts[32];
	struct timespec now;
	struct tm tm;
	int n;

	if (level > log_level)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	/* one write per line so lines of several processes do not interleave */
	dprintf(STDERR_FILENO, "%s.%03ldZ gxboot[%d] %s: %s\n", ts, now.tv_nsec / 1000000L,
		(int)getpid(), level_name(level), msg);
}

void gx_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gx_vlog(level, fmt, ap);
	va_end(ap);
}

/* ---- clocks ---- */
static int64_t clock_us(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t gx_now_ms(void)
{
	return clock_us(CLOCK_MONOTONIC) / 1000;
}

int64_t gx_now_us(void)
{
	return clock_us(CLOCK_MONOTONIC);
}

int64_t gx_wall_ms(void)
{
	return clock_us(CLOCK_REALTIME) / 1000;
}

/* ---- strings ---- */
int gx_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n;

	if (size == 0)
		return -ENAMETOOLONG;
	n = strnlen(src, size);
	if (n == size) {
		memcpy(dst, src, size - 1);
		dst[size - 1] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(dst, src, n + 1);
	return 0;
}

int gx_parse_long(const char *s, long min, long max, long *out)
{
	char *end = NULL;
	long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end != '\0')
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int gx_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = {"1", "true", "yes"};
	static const char *const no[] = {"0", "false", "no"};
	size_t i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < 3; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- validators ---- */
int gx_valid_hostname(const char *s)
{
	size_t len, label = 0, i;

	if (!s)
		return 0;
	len = strnlen(s, 254);
	if (len == 0 || len > 253)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '.') {
			/* empty label, or label ending in '-' */
			if (label == 0 || s[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!isalnum(c) && c != '-')
			return 0;
		if (c == '-' && label == 0)
			return 0;
		if (++label > 63)
			return 0;
	}
	/* a trailing dot (FQDN) is fine; a trailing '-' is not */
	return s[len - 1] != '-';
}

int gx_valid_ifname(const char *s)
{
	size_t len, i;

	if (!s)
		return 0;
	len = strnlen(s, 16);
	if (len == 0 || len > 15)
		return 0;
	if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c >= 0x7f || c == '/' || c == ':' || c == '\'' || c == '"' ||
		    c == '$' || c == '`' || c == '\\' || c == ',' || c == '=')
			return 0;
	}
	return 1;
}

int gx_valid_rdmadev(const char *s)
{
	size_t len, i;

	if (!s)
		return 0;
	len = strnlen(s, 64);
	if (len == 0 || len > 63)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!isalnum(c) && c != '_' && c != '-' && c != '.')
			return 0;
	}
	return 1;
}

int gx_valid_jobid(const char *s)
{
	size_t len, i;

	if (!s)
		return 0;
	len = strnlen(s, 129);
	if (len == 0 || len > 128)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!isalnum(c) && c != '_' && c != '-' && c != '.' && c != ':')
			return 0;
	}
	return 1;
}

int gx_safe_text(const char *s, size_t maxlen)
{
	size_t len, i;

	if (!s)
		return 0;
	len = strnlen(s, maxlen + 1);
	if (len > maxlen)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < ' ' || c >= 0x7f || c == '\'' || c == '"' || c == '\\' || c == '$' ||
		    c == '`')
			return 0;
	}
	return 1;
}
