/* SPDX-License-Identifier: MIT */
/*
 * nd_json.c - the result as JSON (jansson; links, rdma, choice, passed_over,
 * rails, warnings) and as the human table of `gxboot netdetect`. README.md "Output".
 */
#include "netdetect/nd_int.h"
#include "rdzv/gx/gx.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

static json_t *nd_j_addrs(const struct nd_link *l)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < l->naddrs; i++) {
		const struct nd_addr *x = &l->addrs[i];

		json_array_append_new(a, json_pack("{s:s, s:i, s:s, s:s}", "addr", x->str,
						   "prefixlen", x->prefixlen, "family",
						   x->family == AF_INET ? "inet" : "inet6", "scope",
						   x->scope == 0     ? "global"
						   : x->scope == 253 ? "link"
								     : "host"));
	}
	return a;
}

static json_t *nd_j_links(const struct nd_result *r)
{
	const struct nd_inventory *inv = r->inv;
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && inv && i < inv->nlinks; i++) {
		const struct nd_link *l = &inv->links[i];
		json_t *o = json_pack(
		    "{s:s, s:i, s:s, s:s, s:b, s:b, s:i, s:s, s:i, s:b, s:i, s:o}", "name", l->name,
		    "ifindex", l->ifindex, "kind", l->kind, "operstate",
		    nd_operstate_str(l->operstate), "up", l->admin_up, "carrier", l->carrier, "mtu",
		    l->mtu, "mac", l->mac, "arptype", l->arptype, "default_route", l->is_default,
		    "speed_mbps", l->speed_mbps, "addrs", nd_j_addrs(l));

		/* added later: the pod network, and what tells CNI plumbing apart */
		if (o)
			json_object_update_new(o, json_pack("{s:b, s:i, s:b, s:b, s:b}", "primary",
							    nd_link_is_primary(r, l), "master",
							    l->master, "noarp",
							    !!(l->flags & IFF_NOARP), "pointopoint",
							    !!(l->flags & IFF_POINTOPOINT),
							    "veth_peer_here", l->peer_here));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *nd_j_gids(const struct nd_inventory *inv, const struct nd_port *p)
{
	json_t *a = json_array();
	const struct nd_link *l;
	char g[ND_ADDR6SIZ];
	size_t i;

	for (i = 0; a && i < p->ngids; i++) {
		const struct nd_gid *x = &p->gids[i];

		l = nd_link_by_index(inv, (int)x->ifindex);
		nd_gid_str(x->raw, g, sizeof(g));
		json_array_append_new(
		    a, json_pack("{s:i, s:s, s:s, s:i, s:b}", "index", (int)x->index, "gid", g,
				 "type", nd_gid_type_str((int)x->type), "ndev_ifindex",
				 (int)x->ifindex, "ours", l && nd_gid_owned(x, l)));
	}
	return a;
}

static json_t *nd_j_ports(const struct nd_inventory *inv, const struct nd_device *d)
{
	json_t *a = json_array();
	const struct nd_link *l;
	size_t j;

	for (j = 0; a && j < d->nports; j++) {
		const struct nd_port *p = &d->ports[j];

		l = nd_port_link(inv, p);
		json_array_append_new(
		    a, json_pack("{s:i, s:s, s:s, s:i, s:i, s:s?, s:o}", "port", p->num, "state",
				 p->state == ND_PORT_ACTIVE ? "ACTIVE" : "DOWN", "link_layer",
				 nd_link_layer_str(p->link_layer), "mtu", p->mtu, "rate_mbps",
				 p->rate_mbps, "netdev", l ? l->name : NULL, "gids",
				 nd_j_gids(inv, p)));
	}
	return a;
}

static json_t *nd_j_rdma(const struct nd_inventory *inv)
{
	json_t *a = json_array();
	char guid[24];
	size_t i;

	for (i = 0; a && inv && i < inv->ndevs; i++) {
		const struct nd_device *d = &inv->devs[i];

		snprintf(guid, sizeof(guid), "%016llx", (unsigned long long)d->guid);
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:b, s:s?, s:o}", "name",
						   d->name, "node_guid", guid, "uverbs", d->uverbs,
						   "usable", nd_dev_usable(d), "error",
						   d->open_err ? gx_strerror(d->open_err) : NULL,
						   "ports", nd_j_ports(inv, d)));
	}
	return a;
}

static json_t *nd_j_choice(const struct nd_result *r)
{
	const struct nd_link *l = r->inv && r->iface[0] ? nd_link_by_name(r->inv, r->iface) : NULL;
	int rd = r->rdma_dev[0] != '\0';

	return json_pack("{s:s?, s:i, s:o, s:i, s:b, s:s?, s:s?, s:i, s:i, s:s?, s:s?, s:b, s:s}",
			 "iface", r->iface[0] ? r->iface : NULL, "ifindex", r->ifindex, "addrs",
			 l ? nd_j_addrs(l) : json_array(), "mtu", r->mtu, "is_primary",
			 r->is_primary, "network", r->network[0] ? r->network : NULL, "rdma_dev",
			 rd ? r->rdma_dev : NULL, "port", rd ? r->rdma_port : 0, "gid_index",
			 r->gid_index, "gid_type",
			 r->gid_index >= 0 ? nd_gid_type_str(r->gid_type) : NULL, "link_layer",
			 rd ? nd_link_layer_str(r->link_layer) : NULL, "rdma_usable",
			 r->rdma_usable, "reason", r->reason);
}

static json_t *nd_j_rails(const struct nd_result *r)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < r->nrails; i++) {
		const struct nd_rail *x = &r->rails[i];

		json_array_append_new(
		    a,
		    json_pack("{s:s, s:i, s:s?, s:s?, s:i, s:s?, s:s, s:i, s:i, s:i}", "dev",
			      x->dev, "port", x->port, "iface", x->iface[0] ? x->iface : NULL,
			      "addr", x->addr[0] ? x->addr : NULL, "gid_index", x->gid_index,
			      "gid_type", x->gid_index >= 0 ? nd_gid_type_str(x->gid_type) : NULL,
			      "link_layer", nd_link_layer_str(x->link_layer), "rate_mbps",
			      x->rate_mbps, "mtu", x->mtu, "netdev_mtu", x->netdev_mtu));
	}
	return a;
}

static json_t *nd_j_passed(const struct nd_result *r)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < r->npassed; i++)
		json_array_append_new(a, json_pack("{s:s, s:s}", "iface", r->passed[i].iface, "why",
						   r->passed[i].why));
	return a;
}

static json_t *nd_j_lines(char *const *lines, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(lines[i]));
	return a;
}

/* The SR-IOV device plugin's devices (PCIDEVICE_*, device-info): what was mapped to what. */
static json_t *nd_j_pcidevs(const struct nd_inventory *inv)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && inv && i < inv->npcidevs; i++) {
		const struct nd_pcidev *d = &inv->pcidevs[i];

		json_array_append_new(a,
				      json_pack("{s:s, s:s, s:s, s:s, s:s}", "source",
						d->var[0] ? d->var : "network-status device-info",
						"address", d->addr, "netdev", d->netdev, "rdma_dev",
						d->rdma_dev, "rdma_from", d->rdma_src));
	}
	return a;
}

json_t *nd_result_json(const struct nd_result *r)
{
	const struct nd_inventory *inv = r->inv;
	char status[160] = "ok";
	json_t *j;

	if (inv && inv->rdma_err && !inv->ndevs)
		snprintf(status, sizeof(status), "no RDMA devices (%s)",
			 gx_strerror(inv->rdma_err));
	else if (inv && !inv->ndevs)
		snprintf(status, sizeof(status), "no RDMA devices");
	j = json_pack("{s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:i, s:s, s:o}", "links", nd_j_links(r),
		      "rdma", nd_j_rdma(inv), "rdma_status", status, "pcidevices",
		      nd_j_pcidevs(inv), "choice", nd_j_choice(r), "passed_over", nd_j_passed(r),
		      "rails", nd_j_rails(r), "nccl_gid_index", r->nccl_gid_index, "nccl_gid_why",
		      r->nccl_gid_why, "warnings", nd_j_lines(r->warnings, r->nwarnings));
	/* added later (README "Output"): the pod network, hostNetwork, overlap, notes */
	if (j && json_object_update_new(
		     j, json_pack("{s:{s:s?, s:i, s:i}, s:b, s:s, s:s?, s:o}", "primary", "iface",
				  r->primary[0] ? r->primary : NULL, "ifindex", r->primary_ifindex,
				  "rule", r->primary_rule, "host_network", r->host_network,
				  "host_network_why", r->host_network_why, "overlap",
				  r->overlap[0] ? r->overlap : NULL, "notes",
				  nd_j_lines(r->notes, r->nnotes))) < 0) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* ---- human table ---------------------------------------------------------- */
static void nd_p_links(FILE *f, const struct nd_result *r)
{
	const struct nd_inventory *inv = r->inv;
	size_t i, j;

	fprintf(f, "%-15s %5s %-9s %-6s %6s %7s  %s\n", "IFACE", "INDEX", "KIND", "STATE", "MTU",
		"SPEED", "ADDRESSES");
	for (i = 0; inv && i < inv->nlinks; i++) {
		const struct nd_link *l = &inv->links[i];
		const char *why = NULL;
		char speed[16] = "-";

		nd_link_is_up(l, &why);
		if (l->speed_mbps > 0)
			snprintf(speed, sizeof(speed), "%d", l->speed_mbps);
		fprintf(f, "%-15s %5d %-9s %-6s %6d %7s ", l->name, l->ifindex, l->kind,
			why ? "down" : "up", l->mtu, speed);
		for (j = 0; j < l->naddrs; j++)
			fprintf(f, " %s/%d", l->addrs[j].str, l->addrs[j].prefixlen);
		fprintf(f, "%s%s\n", l->is_default ? "  [default route]" : "",
			strcmp(l->name, r->iface) == 0 ? "  <- chosen" : "");
	}
}

static void nd_p_rdma(FILE *f, const struct nd_result *r)
{
	const struct nd_inventory *inv = r->inv;
	const struct nd_link *l;
	struct nd_gid_pick g;
	size_t i, j;

	if (!inv || !inv->ndevs) {
		fprintf(f, "\nno RDMA devices%s%s%s\n", inv && inv->rdma_err ? " (" : "",
			inv && inv->rdma_err ? gx_strerror(inv->rdma_err) : "",
			inv && inv->rdma_err ? ")" : "");
		return;
	}
	fprintf(f, "\n%-12s %4s %-6s %-10s %5s %7s %-15s %s\n", "RDMA DEV", "PORT", "STATE", "LINK",
		"MTU", "RATE", "NETDEV", "GID");
	for (i = 0; i < inv->ndevs; i++) {
		const struct nd_device *d = &inv->devs[i];

		if (d->open_err || !d->uverbs_ok)
			fprintf(f, "%-12s unusable: %s\n", d->name,
				d->open_err ? gx_strerror(d->open_err)
					    : "no /dev/infiniband/uverbs*");
		for (j = 0; j < d->nports; j++) {
			const struct nd_port *p = &d->ports[j];

			l = nd_port_link(inv, p);
			nd_gid_choose(p, l, &g);
			fprintf(f, "%-12s %4d %-6s %-10s %5d %7d %-15s %d %s\n", d->name, p->num,
				p->state == ND_PORT_ACTIVE ? "ACTIVE" : "DOWN",
				nd_link_layer_str(p->link_layer), p->mtu, p->rate_mbps,
				l ? l->name : "-", g.index, nd_gid_type_str(g.type));
		}
	}
}

void nd_result_print(FILE *f, const struct nd_result *r)
{
	size_t i;

	nd_p_links(f, r);
	nd_p_rdma(f, r);
	fprintf(f, "\nchoice:      %s", r->iface[0] ? r->iface : "(none)");
	if (r->addr4[0])
		fprintf(f, " %s/%d", r->addr4, r->prefix4);
	if (r->addr6[0])
		fprintf(f, " %s/%d", r->addr6, r->prefix6);
	if (r->rdma_dev[0])
		fprintf(f, "  rdma %s:%d gid %d (%s, %s)%s", r->rdma_dev, r->rdma_port,
			r->gid_index, nd_gid_type_str(r->gid_type),
			nd_link_layer_str(r->link_layer), r->rdma_usable ? "" : " unusable");
	fprintf(f, "\nreason:      %s\n", r->reason);
	if (r->primary[0])
		fprintf(f, "pod network: %s (rule %d)%s%s\n", r->primary, r->primary_rule,
			r->host_network ? "  hostNetwork: " : "",
			r->host_network ? r->host_network_why : "");
	for (i = 0; i < r->npassed; i++)
		fprintf(f, "passed over: %s %s\n", r->passed[i].iface, r->passed[i].why);
	for (i = 0; i < r->nrails; i++)
		fprintf(f, "rail:        %s:%d %s %s gid %d %s %d Mb/s mtu %d\n", r->rails[i].dev,
			r->rails[i].port, r->rails[i].iface[0] ? r->rails[i].iface : "-",
			r->rails[i].addr, r->rails[i].gid_index,
			nd_link_layer_str(r->rails[i].link_layer), r->rails[i].rate_mbps,
			r->rails[i].mtu);
	if (r->nccl_gid_index >= 0)
		fprintf(f, "NCCL_IB_GID_INDEX: %d (%s)\n", r->nccl_gid_index, r->nccl_gid_why);
	else
		fprintf(f, "NCCL_IB_GID_INDEX: unset (%s)\n", r->nccl_gid_why);
	for (i = 0; i < r->nwarnings; i++)
		fprintf(f, "warning:     %s\n", r->warnings[i]);
	for (i = 0; i < r->nnotes; i++)
		fprintf(f, "note:        %s\n", r->notes[i]);
}
