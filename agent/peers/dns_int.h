/* SPDX-License-Identifier: MIT */
/* dns_int.h - the DNS lookups are declared on peers' face, peers.h (kept for the bench). */
#ifndef AGENT_DNS_INT_H
#define AGENT_DNS_INT_H

#include "agent/peers/peers.h"

#endif
