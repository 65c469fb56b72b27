/* SPDX-License-Identifier: MIT */
/*
 * fabric_report.c - from the facts to one verdict, the report line and fabric.json
 * (FABRIC.md "Verdict"). Pure functions: the watcher gathers the facts, tests feed them.
 */
#include "agent/fabric/fabric_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *agent_fabric_verdict_name(int verdict)
{
	switch (verdict) {
	case FABRIC_RDMA:
		return "rdma";
	case FABRIC_SECONDARY:
		return "secondary";
	case FABRIC_PRIMARY:
		return "primary";
	default:
		return "unknown";
	}
}

void agent_fabric_bytes_str(uint64_t b, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "kB", "MB", "GB", "TB", "PB"};
	double v = (double)b;
	size_t u = 0;

	while (v >= 1000 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1000;
		u++;
	}
	if (b == 0)
		snprintf(buf, len, "0");
	else if (u == 0 || v >= 10)
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
}

static size_t verified_rails(const struct fabric_facts *f)
{
	size_t i, n = 0;

	for (i = 0; i < f->nrails; i++)
		n += f->rails[i].verified != 0;
	return n;
}

/* A verified rail carried the job's traffic (bytes, or packets where no byte counter). */
static int rail_moved(const struct fabric_rail *r)
{
	if (!r->verified)
		return 0;
	return r->have_bytes ? r->bytes >= FABRIC_RDMA_MIN_BYTES : r->pkts >= FABRIC_RDMA_MIN_PKTS;
}

static size_t rails_moved(const struct fabric_facts *f)
{
	size_t i, n = 0;

	for (i = 0; i < f->nrails; i++)
		n += rail_moved(&f->rails[i]) != 0;
	return n;
}

/* UCX endpoints: 1 with an RDMA lane, 2 with TCP lanes and no RDMA lane, 0 neither */
static int ucx_kind(const struct fabric_ucx *u)
{
	size_t i;
	int tcp = 0;

	for (i = 0; i < u->ntls; i++) {
		int k = agent_fabric_ucx_tl_kind(u->tls[i]);

		if (k == 1)
			return 1;
		tcp |= k == 2;
	}
	return tcp ? 2 : 0;
}

/* Verified rails of which none has a counter this namespace can read (mlx5's compat
 * device in shared mode: no PMA counters in sysfs, no byte counter in the RDMA netlink). */
static int rails_blind(const struct fabric_facts *f)
{
	size_t i;
	int any = 0;

	for (i = 0; i < f->nrails; i++) {
		if (!f->rails[i].verified)
			continue;
		if (f->rails[i].have_bytes || f->rails[i].have_pkts)
			return 0;
		any = 1;
	}
	return any;
}

/* The libraries chose TCP (and neither chose RDMA anywhere). */
static int lib_tcp(const struct fabric_facts *f)
{
	int nccl_tcp = f->nccl.net_socket > 0 && f->nccl.net_ib == 0;
	int ucx = ucx_kind(&f->ucx);

	return (nccl_tcp && ucx != 1) || (ucx == 2 && f->nccl.net_ib == 0);
}

/* NCCL or UCX chose RDMA somewhere */
static int lib_rdma(const struct fabric_facts *f)
{
	return f->nccl.net_ib > 0 || ucx_kind(&f->ucx) == 1;
}

int agent_fabric_verdict(const struct fabric_facts *f)
{
	if (f->by_class[FR_PRIMARY] > 0)
		return FABRIC_PRIMARY;
	/* counters moved, or none to read and the library's word */
	if (!lib_tcp(f) && (rails_moved(f) || (rails_blind(f) && lib_rdma(f))))
		return FABRIC_RDMA;
	if (f->by_class[FR_SECONDARY] > 0)
		return FABRIC_SECONDARY;
	return FABRIC_UNKNOWN;
}

int agent_fabric_evidence(const struct fabric_facts *f)
{
	return f->nccl.comms > 0 || ucx_kind(&f->ucx) != 0 || rails_moved(f) > 0 ||
	       f->by_class[FR_PRIMARY] > 0 ||
	       f->by_class[FR_SECONDARY] + f->by_class[FR_PRIMARY] >= FABRIC_EVIDENCE_BYTES;
}

/* What the library said about why (its variables, its device search, its first warning). */
static void nccl_cause(const struct fabric_nccl *n, char *buf, size_t len)
{
	size_t i, l = 0;

	buf[0] = '\0';
	for (i = 0; i < n->nenv && l < len; i++)
		l += (size_t)snprintf(buf + l, len - l, "%s%s", l ? ", " : "", n->env[i]);
	if (n->ib_none && l < len)
		l += (size_t)snprintf(buf + l, len - l, "%sNET/IB : No device found.",
				      l ? ", " : "");
	if (!l && n->nwarns)
		snprintf(buf, len, "NCCL WARN %s", n->warns[0]);
}

static void ucx_cause(const struct fabric_ucx *u, char *buf, size_t len)
{
	size_t i, l = 0;

	buf[0] = '\0';
	for (i = 0; i < u->nenv && l < len; i++)
		l += (size_t)snprintf(buf + l, len - l, "%s%s", l ? ", " : "", u->env[i]);
	if (!l && u->nwarns)
		snprintf(buf, len, "UCX: %s", u->warns[0]);
}

int agent_fabric_tcp_despite_rdma(const struct fabric_facts *f, char *why, size_t len)
{
	uint64_t tcp = f->by_class[FR_SECONDARY] + f->by_class[FR_PRIMARY];
	char cause[300], b[32];

	if (!verified_rails(f))
		return 0;
	if (f->nccl.net_socket > 0 && f->nccl.net_ib == 0) {
		nccl_cause(&f->nccl, cause, sizeof(cause));
		snprintf(why, len, "NCCL chose NET/Socket%s%s%s", cause[0] ? " (" : "", cause,
			 cause[0] ? ")" : "");
		return 1;
	}
	if (ucx_kind(&f->ucx) == 2) {
		ucx_cause(&f->ucx, cause, sizeof(cause));
		snprintf(why, len, "UCX's endpoints use %s and no RDMA transport%s%s%s",
			 f->ucx.tls[0], cause[0] ? " (" : "", cause, cause[0] ? ")" : "");
		return 1;
	}
	if (tcp >= FABRIC_BULK_BYTES && !rails_moved(f)) {
		agent_fabric_bytes_str(tcp, b, sizeof(b));
		snprintf(why, len,
			 "%s of CMD's TCP to peers while the verified rails moved nothing", b);
		return 1;
	}
	return 0;
}

int agent_fabric_primary_line(const struct fabric_facts *f, char *why, size_t len)
{
	char b[32], proc[300] = "";

	if (!f->by_class[FR_PRIMARY])
		return 0;
	agent_fabric_bytes_str(f->by_class[FR_PRIMARY], b, sizeof(b));
	if (f->primary_pid > 0)
		snprintf(proc, sizeof(proc), " from pid %d%s%s%s", (int)f->primary_pid,
			 f->primary_env[0] ? " (" : "", f->primary_env,
			 f->primary_env[0] ? " in its environment)" : "");
	snprintf(why, len,
		 "CMD's peer traffic goes over the primary network: %s on %s to %s (%s)%s", b,
		 f->primary_if[0] ? f->primary_if : "?", f->primary_peer, f->primary_addr, proc);
	return 1;
}

/* "NCCL NET/IB on mlx5_0:1,mlx5_1:1 (2 of 2 verified rails)" */
static size_t nccl_part(const struct fabric_facts *f, char *buf, size_t len)
{
	const struct fabric_nccl *n = &f->nccl;
	size_t i, j, l, used = 0;
	char cause[300];

	if (!n->comms)
		return 0;
	if (n->net_ib) {
		l = (size_t)snprintf(buf, len, "NCCL NET/IB on ");
		for (i = 0; i < n->nib_devs && l < len; i++) {
			for (j = 0; j < f->nrails; j++) {
				char r[80];

				snprintf(r, sizeof(r), "%s:%d", f->rails[j].dev, f->rails[j].port);
				used += f->rails[j].verified && strcmp(r, n->ib_devs[i]) == 0;
			}
			l +=
			    (size_t)snprintf(buf + l, len - l, "%s%s", i ? "," : "", n->ib_devs[i]);
		}
		if (l < len)
			l += (size_t)snprintf(buf + l, len - l, " (%zu of %zu verified rails)",
					      used, verified_rails(f));
		return l;
	}
	if (n->net_socket) {
		l = (size_t)snprintf(buf, len, "NCCL NET/Socket on ");
		for (i = 0; i < n->nsock_devs && l < len; i++)
			l += (size_t)snprintf(buf + l, len - l, "%s%s", i ? "," : "",
					      n->sock_devs[i]);
		nccl_cause(n, cause, sizeof(cause));
		if (cause[0] && l < len)
			l += (size_t)snprintf(buf + l, len - l, " (%s)", cause);
		return l;
	}
	return (size_t)snprintf(buf, len, "NCCL network %s", n->network);
}

static size_t ucx_part(const struct fabric_facts *f, char *buf, size_t len)
{
	size_t i, l = 0, local = 0;

	if (!f->ucx.eps)
		return 0;
	l = (size_t)snprintf(buf, len, "UCX");
	for (i = 0; i < f->ucx.ntls && l < len; i++) {
		if (!agent_fabric_ucx_tl_kind(f->ucx.tls[i])) {
			local++;
			continue;
		}
		l += (size_t)snprintf(buf + l, len - l, "%s%s", l == 3 ? " " : ",", f->ucx.tls[i]);
	}
	if (local && l < len)
		l += (size_t)snprintf(buf + l, len - l, "%s%zu local", l == 3 ? " " : " +", local);
	return l;
}

static size_t lib_part(const struct fabric_facts *f, char *buf, size_t len)
{
	size_t l = nccl_part(f, buf, len);

	if (l < len && f->ucx.eps) {
		if (l)
			l += (size_t)snprintf(buf + l, len - l, ", ");
		if (l < len)
			l += ucx_part(f, buf + l, len - l);
	}
	if (l)
		return l;
	if (f->nccl_user[0] && f->ucx_user[0])
		return (size_t)snprintf(buf, len,
					"NCCL's and UCX's choices unknown (%s, %s set by "
					"the user)",
					f->nccl_user, f->ucx_user);
	if (f->nccl_user[0])
		return (size_t)snprintf(buf, len, "NCCL's choice unknown (%s set by the user)",
					f->nccl_user);
	if (f->ucx_user[0])
		return (size_t)snprintf(buf, len, "UCX's choice unknown (%s set by the user)",
					f->ucx_user);
	return (size_t)snprintf(buf, len, "no NCCL/UCX lines");
}

static size_t rdma_part(const struct fabric_facts *f, char *buf, size_t len)
{
	uint64_t bytes = 0, pkts = 0;
	size_t i, l;
	int have_bytes = 0;
	char b[32];

	if (!verified_rails(f))
		return 0;
	if (rails_blind(f))
		return (size_t)snprintf(buf, len,
					"RDMA bytes not visible here (no port counter in "
					"this namespace)");
	for (i = 0; i < f->nrails; i++) {
		if (!f->rails[i].verified)
			continue;
		have_bytes |= f->rails[i].have_bytes;
		bytes += f->rails[i].bytes;
		pkts += f->rails[i].pkts;
	}
	if (have_bytes) {
		agent_fabric_bytes_str(bytes, b, sizeof(b));
		l = (size_t)snprintf(buf, len, "RDMA %s", b);
	} else {
		l = (size_t)snprintf(buf, len, "RDMA %llu packets", (unsigned long long)pkts);
	}
	if (l < len && !f->nccl.net_ib)
		l += (size_t)snprintf(buf + l, len - l, " on %zu verified rail%s",
				      verified_rails(f), verified_rails(f) == 1 ? "" : "s");
	return l;
}

/* "12 MB on net1, 0 on eth0 (lo 3 MB)" */
static size_t tcp_part(const struct fabric_facts *f, char *buf, size_t len)
{
	size_t i, l = (size_t)snprintf(buf, len, "CMD's TCP:");
	int any = 0;
	char b[32];

	for (i = 0; i < f->nifs && l < len; i++) {
		const struct fabric_ifstat *s = &f->ifs[i];

		if (s->role == FI_LOOPBACK || (s->role == FI_OTHER && !s->bytes))
			continue;
		agent_fabric_bytes_str(s->bytes, b, sizeof(b));
		l += (size_t)snprintf(buf + l, len - l, "%s %s on %s", any ? "," : "", b, s->name);
		any = 1;
	}
	for (i = 0; i < f->nifs && l < len; i++) {
		if (f->ifs[i].role != FI_LOOPBACK || !f->ifs[i].bytes)
			continue;
		agent_fabric_bytes_str(f->ifs[i].bytes, b, sizeof(b));
		l += (size_t)snprintf(buf + l, len - l, " (%s %s)", f->ifs[i].name, b);
		any = 1;
	}
	if (!any && l < len)
		l += (size_t)snprintf(buf + l, len - l, " none");
	return l;
}

void agent_fabric_line(const struct fabric_facts *f, int verdict, char *buf, size_t len)
{
	size_t l = (size_t)snprintf(buf, len, "fabric: %s: ", agent_fabric_verdict_name(verdict));

	if (l < len)
		l += lib_part(f, buf + l, len - l);
	if (l < len && verified_rails(f)) {
		l += (size_t)snprintf(buf + l, len - l, ", ");
		if (l < len)
			l += rdma_part(f, buf + l, len - l);
	}
	if (l < len)
		l += (size_t)snprintf(buf + l, len - l, "; ");
	if (l < len)
		tcp_part(f, buf + l, len - l);
}

/* ---- fabric.json ---- */

static json_t *tcp_json(const struct fabric_facts *f)
{
	static const char *const role[] = {"other", "secondary", "primary", "loopback"};
	json_t *o = json_object();
	size_t i;

	for (i = 0; o && i < f->nifs; i++) {
		const struct fabric_ifstat *s = &f->ifs[i];

		json_object_set_new(o, s->name,
				    json_pack("{s:I,s:i,s:s,s:I,s:I,s:I,s:I}", "bytes",
					      (json_int_t)s->bytes, "connections", (int)s->conns,
					      "role", role[s->role], "peer_secondary",
					      (json_int_t)s->by_class[FR_SECONDARY], "peer_primary",
					      (json_int_t)s->by_class[FR_PRIMARY], "other",
					      (json_int_t)s->by_class[FR_OTHER], "loopback",
					      (json_int_t)s->by_class[FR_LOOPBACK]));
	}
	return o;
}

static json_t *rdma_json(const struct fabric_facts *f)
{
	json_t *o = json_object();
	size_t i;

	for (i = 0; o && i < f->nrails; i++) {
		const struct fabric_rail *r = &f->rails[i];
		char key[80];

		snprintf(key, sizeof(key), "%s:%d", r->dev, r->port);
		json_object_set_new(
		    o, key,
		    json_pack("{s:o,s:o,s:b,s:s}", "bytes",
			      r->have_bytes ? json_integer((json_int_t)r->bytes) : json_null(),
			      "packets",
			      r->have_pkts ? json_integer((json_int_t)r->pkts) : json_null(),
			      "verified", r->verified, "counters", r->source));
	}
	return o;
}

static json_t *strings(const char (*v)[200], size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *list72(const char (*v)[72], size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *list128(const char (*v)[128], size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *library_json(const struct fabric_facts *f)
{
	const struct fabric_nccl *n = &f->nccl;
	const struct fabric_ucx *u = &f->ucx;
	char ns[160], us[160];

	if (f->nccl_ours)
		snprintf(ns, sizeof(ns), "%s", f->nccl_files ? "logged" : "no log (not used)");
	else
		snprintf(ns, sizeof(ns), "unknown (%s set by the user)", f->nccl_user);
	if (f->ucx_ours)
		snprintf(us, sizeof(us), "%s", f->ucx_files ? "logged" : "no log (not used)");
	else
		snprintf(us, sizeof(us), "unknown (%s set by the user)", f->ucx_user);
	return json_pack("{s:{s:s,s:i,s:i,s:s?,s:o,s:o,s:b,s:o,s:o,s:i},"
			 "s:{s:s,s:i,s:i,s:o,s:o,s:o,s:i}}",
			 "nccl", "state", ns, "processes", f->nccl_files, "communicators", n->comms,
			 "network", n->network[0] ? n->network : NULL, "ib_devices",
			 list72(n->ib_devs, n->nib_devs), "socket_devices",
			 list72(n->sock_devs, n->nsock_devs), "ib_no_device", n->ib_none, "env",
			 list128(n->env, n->nenv), "warnings", strings(n->warns, n->nwarns),
			 "warnings_total", (int)n->warns_total, "ucx", "state", us, "processes",
			 f->ucx_files, "endpoints", u->eps, "transports", list72(u->tls, u->ntls),
			 "env", list128(u->env, u->nenv), "warnings", strings(u->warns, u->nwarns),
			 "warnings_total", (int)u->warns_total);
}

static json_t *remotes_json(const struct fabric_facts *f)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < f->nremotes; i++)
		json_array_append_new(a, json_pack("{s:s,s:I}", "addr", f->remotes[i].addr, "bytes",
						   (json_int_t)f->remotes[i].bytes));
	return a;
}

char *agent_fabric_json(const struct fabric_facts *f, int verdict, int final, int expect,
			const char *gate_why, const char *job_line)
{
	static const char *const ex[] = {"report", "secondary", "rdma", "off"};
	char line[FABRIC_LINE_LEN], why[600] = "", prim[600] = "";
	json_t *j;
	char *text;

	agent_fabric_line(f, verdict, line, sizeof(line));
	agent_fabric_tcp_despite_rdma(f, why, sizeof(why));
	agent_fabric_primary_line(f, prim, sizeof(prim));
	j = json_pack("{s:s,s:s,s:b,s:o,s:o,s:o,s:{s:s?,s:s?},s:o,s:i,s:i,s:b,s:{s:s,s:s?}}",
		      "verdict", agent_fabric_verdict_name(verdict), "line", line, "final", final,
		      "tcp", tcp_json(f), "rdma", rdma_json(f), "library", library_json(f),
		      "warnings", "tcp_despite_rdma", why[0] ? why : NULL, "primary_peer_traffic",
		      prim[0] ? prim : NULL, "unclassified_primary", remotes_json(f), "processes",
		      (int)f->processes, "unreadable_processes", (int)f->unreadable,
		      "knows_every_peer", f->full_table, "gate", "expect", ex[expect & 3], "ended",
		      gate_why && gate_why[0] ? gate_why : NULL);
	if (!j)
		return NULL;
	if (job_line)
		json_object_set_new(j, "job", json_string(job_line));
	json_object_set_new(j, "tcp_unattributed",
			    json_pack("{s:I,s:i}", "bytes", (json_int_t)f->unseen_bytes,
				      "connections", (int)f->unseen_conns));
	json_object_set_new(j, "watcher",
			    json_pack("{s:I,s:I,s:I}", "cpu_us", (json_int_t)f->cpu_us, "dumps",
				      (json_int_t)f->dumps, "elapsed_ms",
				      (json_int_t)f->elapsed_ms));
	text = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(j);
	return text;
}
