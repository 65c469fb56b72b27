/* SPDX-License-Identifier: MIT */
/*
 * check.c - `gxboot check` after its rendezvous (never aborts on a broken pair), given
 * the job and what it met as plain data (check.h; cli/cmd_check.c meets through the
 * pipeline): the check service, this pod's probes, the reports and the result. Every pod
 * prints its own row and the summary; the coordinator prints the matrix. Exit 0 when
 * every pair is OK, 1 otherwise. Wire: agent/check/CHECK.md.
 */
#include "agent/check/check.h"
#include "agent/check/check_int.h"
#include "netdetect/netdetect.h"
#include "rdzv/rdma/rdzv_rdma.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROBE_WAVE_MS 7000   /* connect 2 s + 5 echoes of 1 s */
#define RETRY_SLACK_MS 10000 /* check_probe.c: timed-out probes tried again, longer */
#define RDMA_PROBE_MS 3000   /* check_rdma.c: one RDMA-CM probe */
#define INFLIGHT 16
#define MAX_WARN 8

struct agent_check {
	struct agent_check_job j;
	struct agent_check_met m;
	int has_token;
	struct check_world w;
	struct check_net net;
	struct rdzv_rdma_ctx *rdma;
	struct rdzv_rdma_ctx *rail_rdma[CHECK_MAX_RAILS]; /* check --rails: a server per rail */
	struct check_rdma probes; /* this pod's RDMA-CM probes, in the loop */
	int rdma_state;
	const char *warn[MAX_WARN];
	char warnbuf[MAX_WARN][512];
	size_t nwarn;
};

/* Worst time one pod's probes take: the most probes any pod makes (per target: 1 + rails). */
static int64_t probe_budget_ms(const struct check_world *w, int rdma)
{
	int64_t probes = ((int64_t)w->n - 1) * (1 + (int64_t)w->nrails);
	int64_t waves = (probes + INFLIGHT - 1) / INFLIGHT;

	return waves * PROBE_WAVE_MS + CHECK_GRACE_MS(w->n) + RETRY_SLACK_MS +
	       (rdma ? probes * RDMA_PROBE_MS : 0);
}

static int derive_key(struct agent_check *c, char *err, size_t errlen)
{
	char purpose[160];
	int rc;

	snprintf(purpose, sizeof(purpose), "check:%s", c->j.job_id);
	if (c->j.token_len) {
		rc = rdzv_derive_key(c->j.token, c->j.token_len, purpose, c->net.key);
	} else {
		/* the same as the rendezvous without a token: anyone knowing the job id */
		gx_warn("unauthenticated check (no token)");
		rc = rdzv_derive_key((const unsigned char *)c->j.job_id, strlen(c->j.job_id),
				     purpose, c->net.key);
	}
	if (rc < 0)
		snprintf(err, errlen, "cannot derive the check key: %s", gx_strerror(rc));
	return rc;
}

static void rdma_setup(struct agent_check *c)
{
	const struct nd_result *nd = c->j.nd;
	int rc;

	c->rdma_state = CHECK_RDMA_NONE;
	if (!nd || c->j.o->rdma == AGENT_RDMA_OFF)
		return;
	if (!nd->rdma_usable) {
		/* a device that cannot be used here (memlock, uverbs: netdetect said why) is
		 * "not available", not "no device": the summary must not claim none exists */
		if (nd->rdma_dev[0])
			c->rdma_state = CHECK_RDMA_UNAVL;
		return;
	}
	rc = rdzv_rdma_ctx_new(rdzv_rdma_cm_real(), (size_t)c->j.o->size, &c->rdma);
	if (rc == 0) /* wire v2: the job's key, before the token is wiped */
		rc = rdzv_rdma_set_key(c->rdma, c->j.token, c->j.token_len, c->j.job_id);
	if (rc < 0) {
		rdzv_rdma_ctx_free(c->rdma);
		gx_warn("RDMA: not available (%s): TCP probes only", gx_strerror(rc));
		c->rdma_state = CHECK_RDMA_UNAVL;
		c->rdma = NULL;
		return;
	}
	c->rdma_state = CHECK_RDMA_OK;
}

/* check --rails: probe every rail too; "none" (and no --rails) = not. */
static int rails_wanted(const struct agent_opts *o)
{
	return o->rails && *o->rails && strcmp(o->rails, "none") != 0;
}

static void print_rails(const struct nd_result *nd)
{
	size_t i;

	printf("  rails:       %s", nd && nd->nrails ? "" : "none found");
	for (i = 0; nd && i < nd->nrails; i++)
		printf("%s%s%s%s", i ? ", " : "", nd->rails[i].iface[0] ? nd->rails[i].iface : "-",
		       nd->rails[i].dev[0] ? " " : " (TCP)", nd->rails[i].dev);
	printf("\n");
}

/*
 * check --rails without an RDMA rail: every up secondary netdev with a global
 * address is a rail (netdetect/README.md "Rails"); they travel in the JOIN.
 */
static void rails_setup(struct agent_check *c)
{
	int rc;

	if (!rails_wanted(c->j.o) || !c->j.nd)
		return;
	rc = nd_rails_netdevs(c->j.nd);
	if (rc < 0)
		gx_warn("check --rails: cannot list the rails: %s", gx_strerror(rc));
	else if (rc == 0)
		gx_warn(
		    "check --rails: this pod has no rail (no RDMA rail, no up secondary netdev)");
	else
		gx_info("check --rails: %d rail%s", rc, rc == 1 ? "" : "s");
}

static void plan(const struct agent_check *c)
{
	const struct agent_opts *o = c->j.o;

	printf("gxboot check plan (dry run: no network used)\n");
	printf("  peers:       %zu from %s\n", c->j.n, c->j.source);
	printf("  this pod:    %s, %s\n", c->j.names[c->j.self],
	       c->j.self == 0 ? "coordinator" : "member");
	printf("  check port:  %ld\n", o->check_port ? o->check_port : o->port + 1);
	printf("  mode:        %s\n",
	       o->check_mode == AGENT_CHECK_SAMPLED
		   ? "sampled (--sample peers per pod + the coordinator)"
	       : o->check_mode == AGENT_CHECK_STAR ? "star"
	       : o->check_mode == AGENT_CHECK_DEFAULT && c->j.n > CHECK_MATRIX_MAX
		   ? "star (the default above 64 pods; --mode all probes every pair)"
		   : "all");
	printf("  token:       %s\n", c->has_token ? "yes" : "none (unauthenticated)");
	printf("  interface:   %s\n", c->j.nd ? c->j.nd->iface : c->j.nd_err);
	if (rails_wanted(o))
		print_rails(c->j.nd);
}

/* Run the loop until *flag or the deadline. */
static void run_until(struct agent_check *c, const int *flag, int64_t deadline)
{
	while (!*flag && gx_now_ms() < deadline)
		if (gx_ev_run_until(c->m.ev, deadline) == -ETIMEDOUT)
			break;
}

/* A VFAILED entry's why: its netdetect line, or its failed secondary verification. */
static void vfailed_why(const struct rdzv_peer *p, char *buf, size_t len)
{
	if (!p->iface[0])
		snprintf(buf, len, "%s", p->nd_why);
	else
		snprintf(buf, len, "%.15s cannot reach the coordinator: %.200s", p->iface,
			 p->nd_why);
}

static void own_row(struct agent_check *c)
{
	struct check_row *row = &c->w.rows[c->net.self];
	const struct rdzv_peer *me = &c->m.res->table[c->net.self];
	uint32_t i;

	row->reported = 1;
	row->mtu = c->j.nd ? c->j.nd->mtu : 0;
	row->rdma = c->rdma_state;
	if (c->j.nd_rc < 0)
		gx_strlcpy(row->why, c->j.nd_err, sizeof(row->why));
	else if (me->flags & RDZV_PF_VFAILED)
		vfailed_why(me, row->why, sizeof(row->why));
	/* the coordinator knows why a silent pod failed its verification */
	for (i = 0; i < c->w.n && c->net.is_coord; i++) {
		if (i == c->net.self)
			continue;
		c->w.rows[i].mtu = c->m.res->table[i].mtu; /* until its report says */
		if (c->m.res->table[i].flags & RDZV_PF_VFAILED)
			vfailed_why(&c->m.res->table[i], c->w.rows[i].why,
				    sizeof(c->w.rows[i].why));
	}
}

static void add_warning(struct agent_check *c, const char *line)
{
	if (c->nwarn == MAX_WARN)
		return;
	gx_strlcpy(c->warnbuf[c->nwarn], line, sizeof(c->warnbuf[0]));
	c->warn[c->nwarn] = c->warnbuf[c->nwarn];
	c->nwarn++;
}

/*
 * The exit-1 line: the pods that failed their own checks, sent no report, or
 * fail with known-good pods (agent_check_blame), then the paths between good pods.
 */
static int fail_line(const struct check_world *w, const struct check_summary *s, char *err,
		     size_t errlen)
{
	size_t n, named;

	n = (size_t)snprintf(err, errlen, "check failed: %s; failing:", s->line);
	named = n < errlen ? agent_check_blame_text(w, err + n, errlen - n) : 0;
	n = strlen(err);
	if (n < errlen)
		named += agent_check_rails_broken(w, err + n, errlen - n);
	n = strlen(err);
	if (!named && n < errlen)
		snprintf(err + n, errlen - n, " %u report(s) missing", s->missing);
	return GX_ECHECK;
}

static void coord_warnings(struct agent_check *c)
{
	char line[512];
	uint32_t i;

	for (i = 0; i < c->w.n; i++)
		if (!c->w.rows[i].reported) {
			snprintf(line, sizeof(line), "no report from %s", c->w.names[i]);
			add_warning(c, line);
		}
	if (agent_check_mtu_warning(&c->w, line, sizeof(line)))
		add_warning(c, line);
}

/* A known-good member to probe through: not blamed, not probed again, holding its report
 * connection; the first after the coordinator in ring order. n: none. */
static uint32_t pick_via(struct agent_check *c, const unsigned char *blame,
			 const unsigned char *only)
{
	uint32_t m, i;

	for (m = 1; m < c->w.n; m++) {
		i = (c->net.self + m) % c->w.n;
		if (blame[i] == CHECK_BLAME_NONE && !only[i] && c->w.rows[i].reported &&
		    agent_check_serve_has(&c->net, i))
			return i;
	}
	return c->w.n;
}

/* "A's second probe: timeout" for each vantage that probed pod i (""). */
static void second_whys(struct agent_check *c, uint32_t i, const struct check_world *again,
			const struct check_world *via, uint32_t g, char *buf, size_t len)
{
	const struct check_probe *p;
	size_t off = 0;

	buf[0] = '\0';
	if ((p = agent_check_find(again, c->net.self, i, CHECK_TCP)))
		off += (size_t)snprintf(buf, len, "%s's second probe: %s", c->w.names[c->net.self],
					p->why);
	if (g < c->w.n && (p = agent_check_find(via, g, i, CHECK_TCP)) && off < len)
		snprintf(buf + off, len - off, "%s%s's second probe: %s", off ? ", " : "",
			 c->w.names[g], p->why);
}

/* The OK second probe of pod i (the coordinator's, else the member's), or NULL. */
static const struct check_probe *second_ok(struct agent_check *c, uint32_t i,
					   const struct check_world *again,
					   const struct check_world *via, uint32_t g, uint32_t *by)
{
	const struct check_probe *p = agent_check_find(again, c->net.self, i, CHECK_TCP);

	*by = c->net.self;
	if (p && p->ok)
		return p;
	p = g < c->w.n ? agent_check_find(via, g, i, CHECK_TCP) : NULL;
	*by = g;
	return p && p->ok ? p : NULL;
}

/*
 * The second pass (no false alarm from one lost probe): every pod that agent_check_blame blamed (no
 * good pair, or no report) is probed once more, with the retries, before `by`: by the coordinator
 * when it is known good, and through a known-good member (a sealed PROBE on its report connection,
 * answered by PROBED). A failure confirmed from every vantage goes into the pod's row why (named,
 * and shown on every pod: the result carries it); a pod that a known-good pod reaches now gets a
 * warning and counts as reached (row second): agent_check_blame then names the failed pairs' paths
 * instead of it when it has no other failure. A report that arrives meanwhile goes into the world
 * and counts.
 */
static void second_pass(struct agent_check *c, int64_t by)
{
	struct check_net *n = &c->net;
	struct check_world again, via;
	unsigned char *blame = calloc(c->w.n, 2), *only = blame ? blame + c->w.n : NULL;
	const struct check_probe *p;
	char line[512], whys[256];
	size_t npaths, want = 0;
	int self_good, asked = 0, probing = 0;
	uint32_t i, g, who;

	memset(&again, 0, sizeof(again));
	memset(&via, 0, sizeof(via));
	if (!blame)
		return;
	agent_check_blame(&c->w, blame, &npaths);
	self_good = blame[n->self] == CHECK_BLAME_NONE;
	/* the coordinator itself among them when blamed: only the member probes it */
	for (i = 0; i < c->w.n; i++) {
		only[i] = blame[i] == CHECK_BLAME_POD || blame[i] == CHECK_BLAME_BOTH ||
			  blame[i] == CHECK_BLAME_MISSING;
		want += only[i];
	}
	g = want ? pick_via(c, blame, only) : c->w.n;
	if (!want || (!self_good && g == c->w.n) ||
	    agent_check_world_init(&again, c->w.n, 0, c->w.names) < 0 ||
	    agent_check_world_init(&via, c->w.n, 0, c->w.names) < 0)
		goto out;
	gx_info("check: second pass: probing %zu blamed pod(s) again from %s%s%s", want,
		self_good ? c->w.names[n->self] : "", self_good && g < c->w.n ? " and " : "",
		g < c->w.n ? c->w.names[g] : "");
	if (g < c->w.n)
		asked = agent_check_serve_ask(n, g, only, &via) == 0;
	if (self_good)
		probing = agent_check_probes_again(n, &again, only) == 0;
	while (gx_now_ms() < by && ((probing && !n->probes_done) || (asked && !n->probed_done)))
		if (gx_ev_run_until(c->m.ev, by) == -ETIMEDOUT)
			break;
	if (asked && !n->probed_done)
		gx_warn("check: second pass: no answer from %s", c->w.names[g]);
	agent_check_probes_reset(n);
	n->probed = NULL;
	for (i = 0; i < c->w.n; i++) {
		if (!only[i])
			continue;
		if (blame[i] == CHECK_BLAME_MISSING && c->w.rows[i].reported)
			continue; /* its report came late: it counts (coord_finish) */
		if ((p = second_ok(c, i, &again, &via, g, &who))) {
			snprintf(line, sizeof(line),
				 "%s %s, but answers %s's second probe (%lld µs)", c->w.names[i],
				 blame[i] == CHECK_BLAME_MISSING ? "sent no report"
								 : "failed its pairs",
				 c->w.names[who], (long long)p->median_us);
			add_warning(c, line);
			c->w.rows[i].second = CHECK_SECOND_OK;
			continue;
		}
		second_whys(c, i, &again, &via, g, whys, sizeof(whys));
		if (whys[0] && !c->w.rows[i].why[0])
			snprintf(c->w.rows[i].why, sizeof(c->w.rows[i].why), "%s; %.200s",
				 blame[i] == CHECK_BLAME_MISSING ? "missing: no report"
								 : "no pod reaches it",
				 whys);
	}
out:
	agent_check_world_free(&again);
	agent_check_world_free(&via);
	free(blame);
}

/* Every reporting member gets the result; wait (at most 5 s) until it is written. */
static int coord_send(struct agent_check *c, const struct check_summary *s)
{
	int64_t by = gx_now_ms() + 5000, now;
	json_t *doc;
	char *text;
	int rc;

	doc = agent_check_result_json(&c->w, s, c->warn, c->nwarn, c->w.n > CHECK_MATRIX_MAX);
	text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!text)
		return -ENOMEM;
	rc = agent_check_serve_reply(&c->net, text, strlen(text));
	free(text);
	while (rc == 0 && agent_check_serve_pending(&c->net) && (now = gx_now_ms()) < by)
		gx_ev_run_until(c->m.ev, now + 200 < by ? now + 200 : by);
	return rc;
}

static void coord_print(struct agent_check *c, const struct check_summary *s)
{
	json_t *doc;

	if (c->j.o->json) {
		doc = agent_check_result_json(&c->w, s, c->warn, c->nwarn, 0);
		if (doc)
			json_dumpf(doc, stdout, JSON_INDENT(2));
		printf("\n");
		json_decref(doc);
	} else {
		agent_check_print_row(stdout, &c->w, c->net.self);
		agent_check_print_matrix(stdout, &c->w, CHECK_TCP);
		agent_check_print_matrix(stdout, &c->w, CHECK_RDMA);
		agent_check_print_rails(stdout, &c->w);
		if (!s->all_ok) {
			printf("failed:\n");
			agent_check_print_failures(stdout, &c->w, 0);
		}
		printf("%s\n", s->line);
	}
	fflush(stdout);
}

/*
 * check --report FILE.html (coordinator): the page from the world it holds;
 * written to FILE.tmp, then renamed. A failure to write is a warning: the
 * check's verdict stands.
 */
static void coord_report(struct agent_check *c, const struct check_summary *s)
{
	const struct agent_opts *o = c->j.o;
	char tmp[4096], pods[32], port[16], when[64], rails[CHECK_MAX_RAILS * CHECK_RAIL_NAME];
	char mode[128];
	const char *params[20];
	size_t np = 0, off = 0;
	time_t now = time(NULL);
	struct tm tm;
	uint32_t k;
	FILE *f;
	int fd, rc;

	if (!o->report || !*o->report)
		return;
	snprintf(pods, sizeof(pods), "%u", c->w.n);
	snprintf(port, sizeof(port), "%u", c->net.port);
	if (gmtime_r(&now, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	else
		snprintf(when, sizeof(when), "?");
	rails[0] = '\0';
	for (k = 0; k < c->w.nrails && off < sizeof(rails); k++)
		off += (size_t)snprintf(rails + off, sizeof(rails) - off, "%s%s", k ? ", " : "",
					c->w.rails[k]);
	params[np++] = "pods";
	params[np++] = pods;
	snprintf(mode, sizeof(mode), "sampled: %u peers per pod + the coordinator, %zu of %u x %u",
		 c->w.sample_k, agent_check_pairs_probed(&c->w), c->w.n, c->w.n - 1);
	params[np++] = "mode";
	params[np++] = c->w.sample_k	   ? mode
		       : !c->w.star	   ? "all pairs"
		       : c->w.star_default ? "star (the default above 64 pods)"
					   : "star (--mode star)";
	params[np++] = "coordinator";
	params[np++] = c->w.names[c->net.self];
	params[np++] = "interface (coordinator)";
	params[np++] = c->net.ifname[0] ? c->net.ifname : "none";
	params[np++] = "rails";
	params[np++] = rails[0] ? rails : "not probed (--rails)";
	params[np++] = "check port";
	params[np++] = port;
	params[np++] = "TCP probe";
	params[np++] = "connect 2 s, 5 echoes of 32 bytes (1 s each), 16 in flight, "
		       "a timed-out probe tried 3 times";
	params[np++] = "finished";
	params[np++] = when;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", o->report) >= (int)sizeof(tmp)) {
		gx_warn("check --report: path too long");
		return;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		gx_warn("check --report: cannot write %s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	rc = agent_check_html_write(f, &c->w, s, params, np, c->warn, c->nwarn);
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, o->report) < 0)
		rc = -errno;
	if (rc < 0) {
		gx_warn("check --report: cannot write %s: %s", o->report, gx_strerror(rc));
		unlink(tmp);
		return;
	}
	gx_info("check: report written to %s", o->report);
}

static int coord_finish(struct agent_check *c, int64_t by, char *err, size_t errlen)
{
	struct check_summary s;
	size_t i;
	int rc;

	rc = agent_check_world_finish(&c->w);
	if (rc < 0)
		return rc;
	agent_check_world_overload(&c->w);
	c->net.late_after = 1;
	second_pass(c, by);
	if (c->net.late) { /* reports that came during the second pass count */
		rc = agent_check_world_finish(&c->w);
		if (rc < 0)
			return rc;
		agent_check_world_overload(&c->w);
	}
	coord_warnings(c);
	agent_check_summarize(&c->w, &s);
	rc = coord_send(c, &s);
	if (rc < 0)
		gx_warn("check: cannot send the result: %s", gx_strerror(rc));
	for (i = 0; i < c->nwarn; i++)
		gx_warn("%s", c->warn[i]);
	coord_print(c, &s);
	coord_report(c, &s);
	return s.all_ok ? 0 : fail_line(&c->w, &s, err, errlen);
}

static void print_warnings(json_t *doc)
{
	json_t *a = json_object_get(doc, "warnings"), *x;
	size_t k;

	json_array_foreach(a, k, x)
	{
		if (k < MAX_WARN && json_is_string(x) && gx_safe_text(json_string_value(x), 512))
			gx_warn("%s", json_string_value(x));
	}
}

static int member_finish(struct agent_check *c, char *err, size_t errlen)
{
	struct check_world all;
	struct check_summary s;
	json_t *doc = NULL;
	char why[160];
	int rc;

	if (c->j.o->report && *c->j.o->report)
		gx_info("check --report: the coordinator (%s) writes the page", c->w.names[0]);
	if (!c->net.result_done) {
		snprintf(err, errlen, "no result from the coordinator %s (%s)", c->w.names[0],
			 c->net.result_why[0] ? c->net.result_why : "no answer");
		return GX_ECHECK;
	}
	rc = agent_check_world_init(&all, c->w.n, c->w.star, c->w.names);
	if (rc < 0)
		return rc;
	all.star_default = c->w.star_default;
	all.sample_k = c->w.sample_k;
	memcpy(all.offs, c->w.offs, sizeof(all.offs));
	rc = agent_check_result_decode(&all, c->net.result, c->net.result_len, &doc, &s, why,
				       sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "bad result from the coordinator: %s", why);
		goto out;
	}
	print_warnings(doc);
	if (c->j.o->json) {
		json_dumpf(doc, stdout, JSON_INDENT(2));
		printf("\n");
	} else {
		agent_check_print_row(stdout, &c->w, c->net.self);
		if (!s.all_ok) {
			printf("failed (from the coordinator's result):\n");
			agent_check_print_failures(stdout, &all, 50);
		}
		printf("%s\n", s.line);
	}
	fflush(stdout);
	rc = s.all_ok ? 0 : fail_line(&all, &s, err, errlen);
out:
	json_decref(doc);
	agent_check_world_free(&all);
	return rc;
}

static int report(struct agent_check *c, char *err, size_t errlen)
{
	unsigned char *frame = NULL;
	char *text = NULL;
	size_t len = 0, flen = 0;
	int rc;

	rc = c->m.coord_addr(c->m.arg, c->net.port, &c->net.coord, &c->net.coordlen, err, errlen);
	if (rc < 0)
		return rc;
	rc = agent_check_report_encode(&c->w, c->net.self, &text, &len);
	if (rc == 0)
		rc = agent_check_seal(c->net.key, CHECK_REPORT, c->net.round, c->net.self, text,
				      len, &frame, &flen);
	free(text);
	if (rc == 0)
		rc = agent_check_report_start(&c->net, frame, flen);
	if (rc < 0)
		snprintf(err, errlen, "cannot send the report: %s", gx_strerror(rc));
	return rc;
}

/*
 * RDMA: serve RDMA-CM connects in the loop; the probes run in the same loop
 * later (check_rdma.c; no fork). A pod that cannot serve reports RDMA as not
 * available; probes to it are then not counted.
 */
static void rdma_start(struct agent_check *c, char *err, size_t errlen)
{
	struct check_net *n = &c->net;
	int rc;

	if (!c->rdma)
		return;
	agent_check_rdma_init(n, c->rdma, (size_t)c->j.o->size, &c->probes);
	rc = rdzv_rdma_serve(c->rdma, c->m.ev, &c->m.res->table[n->self], n->port, err, errlen);
	if (rc < 0) {
		gx_warn("RDMA: not available (%s): TCP probes only", err);
		err[0] = '\0';
		agent_check_rdma_stop(&c->probes);
		c->rdma_state = CHECK_RDMA_UNAVL;
		rdzv_rdma_ctx_free(c->rdma);
		c->rdma = NULL;
	}
}

/*
 * check --rails: an RDMA-CM server on each rail of this pod that has a device
 * (the bootstrap address is already served). A rail that cannot serve is
 * probed by the others and fails there, naming this pod's rail.
 */
static void rails_serve(struct agent_check *c, char *err, size_t errlen)
{
	const struct rdzv_peer *me = &c->m.res->table[c->net.self];
	struct rdzv_peer rp;
	uint32_t k;
	int rc;

	for (k = 0; c->rdma && k < c->w.nrails; k++) {
		if (agent_check_rail_peer(me, c->w.rails[k], &rp) < 0 ||
		    (rp.addr4[0] && strcmp(rp.addr4, me->addr4) == 0) ||
		    (rp.addr6[0] && strcmp(rp.addr6, me->addr6) == 0))
			continue;
		err[0] = '\0';
		rc = rdzv_rdma_ctx_new(rdzv_rdma_cm_real(), (size_t)c->j.o->size, &c->rail_rdma[k]);
		if (rc == 0)
			rc = rdzv_rdma_share_key(c->rail_rdma[k], c->rdma);
		if (rc == 0)
			rc = rdzv_rdma_serve(c->rail_rdma[k], c->m.ev, &rp, c->net.port, err,
					     errlen);
		if (rc < 0)
			gx_warn("RDMA: rail %s not served (%s)", c->w.rails[k],
				err[0] ? err : gx_strerror(rc));
	}
	err[0] = '\0';
}

/*
 * This pod's probes are over (or out of time): its row says how long its loop
 * stalled, and a pod that did not finish its probes says so itself
 * (CHECK_OVERLOADED) rather than letting the missing pairs blame its peers.
 */
static void probes_end(struct agent_check *c)
{
	struct check_net *n = &c->net;
	struct check_row *row = &c->w.rows[n->self];

	row->lag_ms = n->lag_max_ms;
	if (n->retries)
		gx_info("check: %zu probe attempt(s) timed out and were tried again", n->retries);
	if (row->lag_ms >= CHECK_OVERLOAD_MS)
		gx_warn("check: this pod's event loop stalled %lld ms (CPU starved)",
			(long long)row->lag_ms);
	if (!n->probes_done && !row->why[0])
		snprintf(row->why, sizeof(row->why), "%s (%zu of %zu probes done)",
			 CHECK_OVERLOADED, n->ndone, n->npcs);
}

/* After the rendezvous: service, probes, reports, result. */
static int check_phase(struct agent_check *c, char *err, size_t errlen)
{
	struct check_net *n = &c->net;
	int64_t budget = probe_budget_ms(&c->w, c->rdma != NULL), deadline;
	int rc;

	rc = agent_check_serve_start(n, err, errlen);
	if (rc == 0 && c->m.port_shared(n->port)) {
		snprintf(err, errlen,
			 "check port %u is already in use on this node (another check with "
			 "hostNetwork?): give each its own --port",
			 n->port);
		rc = GX_EUSAGE;
	}
	if (rc < 0)
		return rc;
	rdma_start(c, err, errlen);
	rails_serve(c, err, errlen);
	own_row(c);
	gx_info("check: rank %u of %u, %s mode, probing from %s on port %u", n->self, c->w.n,
		c->w.star ? "star" : "all", n->ifname[0] ? n->ifname : "(no secondary interface)",
		n->port);
	agent_check_lag_start(n);
	rc = agent_check_probes_start(n);
	if (rc < 0)
		return rc;
	run_until(c, &n->probes_done, n->t0 + budget);
	probes_end(c);
	if (c->rdma) {
		agent_check_rdma_go(&c->probes);
		run_until(c, &c->probes.done, n->t0 + budget);
		agent_check_rdma_stop(&c->probes);
	}
	deadline = n->t0 + budget + 10000;
	if (n->is_coord) {
		run_until(c, &n->reports_done, deadline);
		/* the second pass (2 tries: up to 2 s + 8 s, the member's behind a PROBE) ends
		 * before the members stop waiting (deadline + 5 s) */
		return coord_finish(c,
				    gx_now_ms() + 20000 < deadline + 3000 ? gx_now_ms() + 20000
									  : deadline + 3000,
				    err, errlen);
	}
	rc = report(c, err, errlen);
	if (rc < 0)
		return rc;
	run_until(c, &n->result_done, deadline + 5000);
	return member_finish(c, err, errlen);
}

static int setup_net(struct agent_check *c)
{
	struct check_net *n = &c->net;
	const struct agent_opts *o = c->j.o;
	int star = o->check_mode == AGENT_CHECK_STAR ||
		   (o->check_mode == AGENT_CHECK_DEFAULT && c->j.n > CHECK_MATRIX_MAX);
	int rc;

	rc = agent_check_world_init(&c->w, (uint32_t)c->j.n, star, c->j.names);
	if (rc < 0)
		return rc;
	c->w.star_default = star && o->check_mode == AGENT_CHECK_DEFAULT;
	if (!star && o->check_mode == AGENT_CHECK_SAMPLED)
		agent_check_world_sample(&c->w, o->sample ? (uint32_t)o->sample : 8,
					 c->m.res->round);
	n->ev = c->m.ev;
	n->w = &c->w;
	n->self = (uint32_t)c->m.res->rank;
	n->round = c->m.res->round;
	n->port = (uint16_t)c->m.port;
	n->is_coord = c->m.res->rank == 0;
	n->table = c->m.res->table;
	n->t0 = gx_now_ms();
	/* the members' clocks start when the COMMIT reaches them; the coordinator's done may
	 * come up to RDZV_COMMIT_WAIT_MS later (a member reconnecting for its COMMIT), and
	 * its deadlines must not pass the members' (512 pods: 402 members gave up waiting
	 * for a result the coordinator sent 26 s after their deadline) */
	if (n->is_coord && c->m.res->t_commit_ms > 0 && c->m.res->t_commit_ms < n->t0)
		n->t0 = c->m.res->t_commit_ms;
	for (int i = 0; i < CHECK_LISTEN_MAX; i++)
		n->lfd[i] = -1;
	/* the probes' and the service's interface (its listeners are bound to it) */
	if (c->j.nd)
		gx_strlcpy(n->ifname, c->j.nd->iface, sizeof(n->ifname));
	/* the rendezvous' own route answers (it asked them for its path), or new ones */
	if (!*c->m.routes && nd_routes_open(c->m.routes) < 0)
		gx_debug("check: no route answers: probes are not checked against the routes");
	n->routes = *c->m.routes;
	if (rails_wanted(o))
		agent_check_rails_plan(&c->w, c->m.res->table, c->w.n);
	return 0;
}

int agent_check_new(const struct agent_check_job *j, struct agent_check **ret)
{
	struct agent_check *c = calloc(1, sizeof(*c));

	*ret = c;
	if (!c)
		return -ENOMEM;
	c->j = *j;
	c->has_token = j->token_len > 0;
	rails_setup(c);
	return 0;
}

void agent_check_plan(const struct agent_check *c)
{
	plan(c);
}

int agent_check_key(struct agent_check *c, char *err, size_t errlen)
{
	int rc = derive_key(c, err, errlen);

	if (rc < 0)
		return rc;
	rdma_setup(c);
	c->j.token = NULL; /* wiped by its owner after the rendezvous */
	c->j.token_len = 0;
	return 0;
}

int agent_check_run(struct agent_check *c, const struct agent_check_met *m, char *err,
		    size_t errlen)
{
	int rc;

	c->m = *m;
	rc = setup_net(c);
	if (rc == 0)
		rc = check_phase(c, err, errlen);
	return rc;
}

void agent_check_free(struct agent_check *c)
{
	if (!c)
		return;
	agent_check_rdma_stop(&c->probes);
	agent_check_probes_stop(&c->net);
	if (c->net.ev)
		agent_check_serve_stop(&c->net);
	rdzv_rdma_ctx_free(c->rdma);
	for (size_t k = 0; k < CHECK_MAX_RAILS; k++)
		rdzv_rdma_ctx_free(c->rail_rdma[k]);
	agent_check_world_free(&c->w);
	sodium_memzero(c->net.key, sizeof(c->net.key));
	free(c);
}
