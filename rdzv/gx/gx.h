/* SPDX-License-Identifier: MIT */
/*
 * gx.h - shared utilities of gxboot (prefix gx_): error codes, debug traces,
 * the epoll event loop (after redis ae.c), socket helpers (after redis anet.c)
 * and validators for anything that comes from a peer, a file or the environment.
 *
 * It lives in rdzv/ because rdzv is the lowest layer that needs all of it;
 * netdetect uses the error codes, validators and traces only.
 */
#ifndef GX_H
#define GX_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

/* ---- error codes: 0 ok, -errno, or these (outside the errno range) ---- */
enum gx_err {
	GX_EBASE = 10000,
	GX_EUSAGE = -(GX_EBASE + 1),	    /* bad usage / configuration (exit 2) */
	GX_EPEERS = -(GX_EBASE + 2),	    /* peers not all present before deadline (exit 3) */
	GX_ENOSECONDARY = -(GX_EBASE + 3),  /* no usable secondary interface (exit 4) */
	GX_ERDZV = -(GX_EBASE + 4),	    /* rendezvous failed (exit 5) */
	GX_EAUTH = -(GX_EBASE + 5),	    /* authentication failed (exit 5) */
	GX_ECONFLICT = -(GX_EBASE + 6),	    /* two live peers claim one name (exit 5) */
	GX_EVERSION = -(GX_EBASE + 7),	    /* peer speaks another major protocol version */
	GX_EPROTO = -(GX_EBASE + 8),	    /* malformed message */
	GX_EMAC = -(GX_EBASE + 9),	    /* message MAC / sequence check failed */
	GX_EJOB = -(GX_EBASE + 10),	    /* job id mismatch */
	GX_EINVAL_NAME = -(GX_EBASE + 11),  /* invalid peer/iface/device name or address */
	GX_ENORDMA = -(GX_EBASE + 12),	    /* RDMA required but not usable (exit 4) */
	GX_ENETLINK = -(GX_EBASE + 13),	    /* netlink (libnl) failure */
	GX_EJSON = -(GX_EBASE + 14),	    /* malformed JSON */
	GX_EDNS = -(GX_EBASE + 15),	    /* DNS failure (c-ares) */
	GX_EREJECTED = -(GX_EBASE + 16),    /* our JOIN was rejected by the coordinator */
	GX_EABORTED = -(GX_EBASE + 17),	    /* the coordinator aborted the job */
	GX_ECHECK = -(GX_EBASE + 18),	    /* check: some pair unreachable (exit 1) */
	GX_ECMDNOTFOUND = -(GX_EBASE + 19), /* CMD not found (exit 127) */
	GX_ECMDEXEC = -(GX_EBASE + 20),	    /* CMD could not be executed (exit 126) */
	GX_EROUTE = -(GX_EBASE + 21),	    /* the kernel routes the secondary path elsewhere */
	GX_EFABRIC = -(GX_EBASE + 22),	    /* --expect-fabric: the job left the fabric (exit 6) */
	GX_EPREFLIGHT = -(GX_EBASE + 23),   /* preflight named another pod: job not started (7) */
	GX_ELEFTOUT = -(GX_EBASE + 24),	    /* preflight named this pod: left out (exit 8) */
	GX_ELAST = -(GX_EBASE + 25),
};

/* Text for 0, a negative errno or a GX_E* code. Never NULL. */
const char *gx_strerror(int err);

/* Exit code (README.md "Exit codes") for an error code: 2, 3, 4, 5, 6, 1 ... */
int gx_exit_code(int err);

/* ---- logging / traces --------------------------------------------------- */
enum gx_log_level {
	GX_LOG_ERROR = 0,
	GX_LOG_WARN = 1,
	GX_LOG_INFO = 2,
	GX_LOG_DEBUG = 3,
	GX_LOG_TRACE = 4,
};

/*
 * The process's log level (default INFO): the program sets it once from -v/-q
 * (agent/cli/main.c), tests from GX_TEST_LOG. Levels outside ERROR..TRACE are clamped.
 */
void gx_log_set_level(int level);
int gx_log_get_level(void);

/* "2026-11-23T10:00:00.123Z gxboot[pid] LEVEL: msg" on stderr. */
void gx_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gx_vlog(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
#define gx_error(...) gx_log(GX_LOG_ERROR, __VA_ARGS__)
#define gx_warn(...) gx_log(GX_LOG_WARN, __VA_ARGS__)
#define gx_info(...) gx_log(GX_LOG_INFO, __VA_ARGS__)
#define gx_debug(...) gx_log(GX_LOG_DEBUG, __VA_ARGS__)
#define gx_trace(...) gx_log(GX_LOG_TRACE, __VA_ARGS__)

/* ---- time --------------------------------------------------------------- */
int64_t gx_now_ms(void);  /* CLOCK_MONOTONIC milliseconds */
int64_t gx_now_us(void);  /* CLOCK_MONOTONIC microseconds */
int64_t gx_wall_ms(void); /* CLOCK_REALTIME milliseconds */

/* ---- event loop (single-threaded epoll, after redis ae.c) --------------- */
struct gx_ev;
typedef void gx_ev_fd_fn(struct gx_ev *ev, int fd, uint32_t events, void *arg);
typedef void gx_ev_timer_fn(struct gx_ev *ev, uint64_t id, void *arg);

/* Creates a loop. Fds may be any value; the table grows as needed. */
int gx_ev_new(struct gx_ev **ret);
void gx_ev_free(struct gx_ev *ev);
/* events: EPOLLIN / EPOLLOUT (level triggered). Replaces an existing entry. */
int gx_ev_add(struct gx_ev *ev, int fd, uint32_t events, gx_ev_fd_fn *fn, void *arg);
int gx_ev_mod(struct gx_ev *ev, int fd, uint32_t events);
void gx_ev_del(struct gx_ev *ev, int fd);
/* One-shot timer after ms milliseconds; returns an id > 0 (0 on ENOMEM). */
uint64_t gx_ev_timer(struct gx_ev *ev, int64_t ms, gx_ev_timer_fn *fn, void *arg);
void gx_ev_timer_cancel(struct gx_ev *ev, uint64_t id);
/* Runs until gx_ev_stop(); returns the rc given to gx_ev_stop. */
int gx_ev_run(struct gx_ev *ev);
/* Runs until stopped or deadline (monotonic ms, 0 = none); -ETIMEDOUT at deadline. */
int gx_ev_run_until(struct gx_ev *ev, int64_t deadline_ms);
void gx_ev_stop(struct gx_ev *ev, int rc);

/* ---- sockets (after redis anet.c); every fd CLOEXEC + NONBLOCK ---------- */
union gx_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
	struct sockaddr_storage ss;
};

/* Parse "1.2.3.4" / "fe80::1%net1" / "[::1]" into sa with port; 0 or -EINVAL. */
int gx_addr_parse(const char *str, uint16_t port, union gx_sockaddr *sa, socklen_t *len);
/* Print the address only (no port) into buf (>= INET6_ADDRSTRLEN). */
const char *gx_addr_str(const union gx_sockaddr *sa, char *buf, size_t len);
/* Normalise an address string: inet_pton + inet_ntop; -EINVAL if not an IP. */
int gx_addr_normalize(const char *in, char *out, size_t outlen);
/* net.core.somaxconn, or 4096 when unreadable. */
int gx_somaxconn(void);
/* Listening TCP socket on sa (SO_REUSEADDR, CLOEXEC, NONBLOCK), backlog somaxconn. */
int gx_tcp_listen(const union gx_sockaddr *sa, socklen_t len, int *fd_out);
/* The same, bound to device ifname first when it is not NULL or "" (SO_BINDTODEVICE:
 * -EPERM without CAP_NET_RAW before Linux 5.7, -ENODEV), with flags GX_LISTEN_*. */
#define GX_LISTEN_SHARED 1 /* SO_REUSEPORT: a wildcard and a device listener share a port */
int gx_tcp_listen_opt(const union gx_sockaddr *sa, socklen_t len, const char *ifname, int flags,
		      int *fd_out);
/*
 * Listeners on a pod's secondary addresses (addr4, addr6: "" skips one) at port, bound to
 * device ifname, GX_LISTEN_SHARED (beside wildcard listeners on the same port): fds[0] for
 * addr4, fds[1] for addr6 (-1 where none). Returns how many opened; 0 with none open when
 * the kernel refuses the device (-EPERM before Linux 5.7 without CAP_NET_RAW, -ENODEV) and
 * *why says so: the caller falls back to the address; < 0 on any other error (none open).
 */
int gx_tcp_listen_secondary(const char *addr4, const char *addr6, uint16_t port, const char *ifname,
			    int fds[2], int *why);
/* Non-blocking connect; 0 when started or done (check SO_ERROR on EPOLLOUT).
 * src may be NULL; otherwise the socket is bound to it (port 0) first. */
int gx_tcp_connect(const union gx_sockaddr *dst, socklen_t dlen, const union gx_sockaddr *src,
		   socklen_t slen, int *fd_out);
/* The same, and bound to device ifname (when not NULL or "") before anything else:
 * the connection then leaves through that interface whatever the routing table says. */
int gx_tcp_connect_dev(const union gx_sockaddr *dst, socklen_t dlen, const union gx_sockaddr *src,
		       socklen_t slen, const char *ifname, int *fd_out);
/* SO_BINDTODEVICE: 0, or -EPERM (no CAP_NET_RAW before Linux 5.7), -ENODEV. */
int gx_bind_device(int fd, const char *ifname);
/* SO_ERROR of a connecting socket as -errno (0 = connected). */
int gx_sock_error(int fd);
/* Raise RLIMIT_NOFILE soft limit to the hard limit; returns the new soft limit. */
long gx_raise_nofile(void);

/* ---- framed connections (gx_frame.c) ------------------------------------ */
/*
 * One framed, bounded, optionally sealed byte stream over a socket. A wire is a fmt: a
 * fixed-size header that fmt->decode turns into a type and the body's length, bounded for
 * that type in the owner's state BEFORE a body byte is read or allocated; then the body.
 * A seal (a MAC trailer, an AEAD) is optional, through hooks that read their keys and
 * sequences from f->owner: gx_frame knows no protocol state, key or budget itself.
 *
 * Input, one frame at a time:
 * - direct: recv on fd, never asking for more than the current header or body, so the next
 *   frame stays in the socket (backpressure; a peer's pipelined frames wait their turn);
 * - fed (f->fed, or carried): the owner's bytes through gx_frame_feed (one recv it made per
 *   readiness, a relay's records); a partial frame is copied and completed by the next feed;
 * - raw: gx_frame_read_raw, exactly n clear bytes (handshakes of fixed size).
 * The body is allocated whole at its header, or grown from f->grow_from doubling under
 * fmt->charge (a budget across connections); fmt->peek sees the first f->peek_at bytes
 * before the rest comes (a rank to refuse early); f->sink reads and drops it (a stream).
 *
 * Output: one queue (buf, len, off) with an optional cap (omax): a frame is queued whole and
 * written at once, or only queued when f->cork (the owner flushes once per event) or
 * carried (no fd: the owner takes it out with gx_frame_out_peek / gx_frame_out_drop). A
 * drained queue holds no buffer (idle connections cost their struct only).
 *
 * recv / send retry EINTR; EAGAIN is "not yet" (read 0, flush 1); EOF is -ECONNRESET (and
 * f->eof); sends never raise SIGPIPE. After a read error the owner resets the connection.
 */
#define GX_FRAME_HDR_MAX 16
#define GX_FRAME_BURST 16 /* recv calls per gx_frame_read: a busy peer cannot hold the loop */

struct gx_frame;

/* One wire's header; const, one per protocol (and per role where the bounds differ). */
struct gx_frame_fmt {
	size_t hdr_len; /* 1 .. GX_FRAME_HDR_MAX */
	/*
	 * The header just read: its type and the body's length on the wire (a seal's bytes
	 * included; check f->sealed_rx), bounded here. 0, or a code gx_frame_read returns
	 * (GX_EPROTO, GX_EVERSION, ...). May set f->grow_from, f->peek_at, f->sink.
	 */
	int (*decode)(struct gx_frame *f, const unsigned char *hdr, unsigned *type, size_t *blen);
	/* The header of a frame of type whose body is blen bytes on the wire; < 0 refuses it
	 * (over its type's bound) before anything is sealed or queued. */
	int (*encode)(const struct gx_frame *f, unsigned char *hdr, unsigned type, size_t blen);
	/* Optional: a body buffer grows from cap `from` to `to` (0 at its release); < 0
	 * refuses the growth (gx_frame_read returns it). Called before every allocation. */
	int (*charge)(struct gx_frame *f, size_t from, size_t to);
	/* Optional: the first f->peek_at body bytes are in (got of them); < 0 refuses. */
	int (*peek)(struct gx_frame *f, const unsigned char *body, size_t got);
};

/* A frame's integrity, optional; used when f->sealed_tx / f->sealed_rx say so. */
struct gx_frame_seal {
	size_t over; /* the bytes seal adds to a body, exactly (a MAC; type and AEAD tag) */
	/* len + over bytes into out: body sealed (MAC'd, encrypted) for type */
	int (*seal)(struct gx_frame *f, unsigned type, const unsigned char *body, size_t len,
		    unsigned char *out);
	/* In place on a body read whole: checked (GX_EMAC), *len shortened to the payload,
	 * which the hook leaves at body[0]; may set *type (a type inside the seal). */
	int (*open)(struct gx_frame *f, unsigned *type, unsigned char *body, size_t *len);
};

struct gx_frame {
	int fd; /* -1: none (carried, or reset) */
	const struct gx_frame_fmt *fmt;
	const struct gx_frame_seal *seal;
	void *owner; /* the protocol's connection: the hooks find their state here */
	uint8_t sealed_tx, sealed_rx; /* seal what is sent / open what is read */
	uint8_t fed;		      /* input only from gx_frame_feed, even with an fd */
	uint8_t carried;	      /* no fd: input fed, output taken out by the owner */
	uint8_t cork;		      /* sends queue; the owner flushes */
	uint8_t eof;		      /* the peer closed its side */
	/* per frame, set by fmt->decode (cleared before it runs) */
	uint8_t sink;	  /* read and drop the body: gx_frame_read gives NULL and its length */
	size_t grow_from; /* 0: the body allocated whole at its header; else from this, x2 */
	size_t peek_at;	  /* > 0: fmt->peek once this many body bytes are in */
	/* input: the last header read (valid until the next frame's first byte), then its body */
	unsigned char hdr[GX_FRAME_HDR_MAX];
	size_t hoff;
	uint8_t in_body, in_raw, peeked;
	unsigned type;
	unsigned char *body;
	size_t blen, boff, bcap;
	const unsigned char *in; /* fed input not yet taken */
	size_t inlen;
	/* output */
	unsigned char *out;
	size_t olen, ooff, ocap;
	size_t omax; /* refuse (-ENOBUFS) to queue beyond this many bytes; 0: no cap */
};

/* An empty connection on fd (-1: none); fmt and seal are borrowed (const, static). fmt NULL:
 * a byte stream with no frames (gx_frame_send_raw, gx_frame_flush, gx_frame_recv only). */
void gx_frame_init(struct gx_frame *f, int fd, const struct gx_frame_fmt *fmt,
		   const struct gx_frame_seal *seal, void *owner);
/* Closes fd, frees both buffers (a charged body is released); f stays usable: fd -1, its
 * fmt, seal and owner kept, every flag and setting cleared. */
void gx_frame_reset(struct gx_frame *f);
/* Fed input: p stays the caller's until gx_frame_read returns 0 (all of it taken) or < 0. */
void gx_frame_feed(struct gx_frame *f, const unsigned char *p, size_t n);
/*
 * The next frame. 1: *type, *body (malloc'd, the caller frees; NULL for a sink frame) and
 * *len (the payload, seal removed); 0: not yet (no more input now, or GX_FRAME_BURST recv
 * calls made: level-triggered readiness comes back); < 0: -ECONNRESET at EOF, -EBADF with no
 * fd, -EBUSY in a raw read, a decode / charge / peek / open refusal, -ENOMEM, -errno.
 */
int gx_frame_read(struct gx_frame *f, unsigned *type, unsigned char **body, size_t *len);
/* Exactly n clear bytes into buf: 1 when all came (with the same n each call until then),
 * 0 not yet, < 0 as gx_frame_read (-EBUSY inside a frame). */
int gx_frame_read_raw(struct gx_frame *f, void *buf, size_t n);
/* One recv of up to cap bytes into the owner's buffer, for bytes it forwards as they are or
 * feeds back (gx_frame_feed: one recv per readiness for all of a connection's frames):
 * n > 0, 0 not yet (EAGAIN, EINTR: readiness comes back), -ECONNRESET at EOF (f->eof),
 * -EBADF with no fd, -errno. */
ssize_t gx_frame_recv(struct gx_frame *f, void *buf, size_t cap);
/* Read and drop what the peer still sends (a lingering close, after a half-close): 1 at its
 * EOF or an error, 0 not yet (EAGAIN, or GX_FRAME_BURST reads made), -EBADF with no fd. */
int gx_frame_drain(struct gx_frame *f);
/* Queue one frame (sealed when f->sealed_tx) and write it unless corked or carried: 0, or
 * the encode refusal, -ENOBUFS past omax, -ENOMEM, -EBADF, a write error (-EPIPE ...). */
int gx_frame_send(struct gx_frame *f, unsigned type, const void *body, size_t len);
/* A header alone for a body of blen bytes the owner then sends raw (a stream); clear only
 * (-EINVAL when sealed_tx). */
int gx_frame_send_hdr(struct gx_frame *f, unsigned type, size_t blen);
/* Bytes as they are (a handshake, an echo of a header read). */
int gx_frame_send_raw(struct gx_frame *f, const void *p, size_t n);
/* Write what is queued: 0 all written (the buffer freed), 1 some left (wait for EPOLLOUT;
 * carried: the owner takes it), < 0 an error. */
int gx_frame_flush(struct gx_frame *f);
static inline size_t gx_frame_pending(const struct gx_frame *f)
{
	return f->olen - f->ooff;
}
/* Carried output: what is queued (*p, the returned length), then n of it taken. */
size_t gx_frame_out_peek(const struct gx_frame *f, const unsigned char **p);
void gx_frame_out_drop(struct gx_frame *f, size_t n);

/* ---- pre-authentication budgets (gx_guard.c; PROTOCOL.md "Bounds") ------ */
/*
 * Every listening service (rendezvous, check, remote exec) keeps its not yet
 * authenticated connections in one of these: oldest first, counted per source
 * address. A service asks gx_pa_admit() before it takes a new connection, with
 * full = 1 when its own connection bound is reached: -EBUSY when that address
 * already holds per_src (loopback is exempt: it is the pod itself), when its IPv6
 * /64 already holds per_net, or when there is no room (pa->refused says which); else
 * 0, with *evict set when full (or at max) to the entry to end first (the caller
 * closes that connection, which calls gx_pa_del, then adds the new one): the oldest
 * from an unknown address; a known one (a peer's address from the job's table) only
 * for a newcomer from a known address. A stranger thus can neither fill the slots nor
 * push out a peer's handshake.
 *
 * Sources (gx_pa_source): an address is its own source, except that every IPv6
 * link-local address (fe80::/10, on any interface) is one source: no peer ever
 * connects from one (netdetect never picks a link-local address, phase 1 goes to a pod
 * address from DNS), and a stranger on a link can take any of 2^64 of them. An IPv6
 * address from outside the table also counts in its /64 (per_net, GX_PA_NET_MULT
 * sources' worth): a stranger with a /64 has 2^64 addresses, while the pods of one node,
 * or of a whole cluster where the CNI hands out small blocks of one /64, share one, so
 * one /64 at per_src would let a handful of handshakes through at a time.
 */
#define GX_PA_NET_MULT 16

enum gx_pa_refusal {
	GX_PA_OK = 0,
	GX_PA_PER_SRC, /* that source holds per_src */
	GX_PA_PER_NET, /* its /64 holds per_net */
	GX_PA_NO_ROOM, /* at the bound, and every entry is a known one (or no newcomer may evict) */
};

struct gx_pa_ent {
	struct gx_pa_ent *older, *newer, *bnext, *nnext;
	struct gx_pa_ent **bpp; /* what points at it in its bucket: removal in O(1) (one source's
				 * entries share a chain: loopback, a relay's children in tests) */
	struct gx_pa_ent **npp; /* the same in its /64's bucket, when it counts in one */
	uint32_t bucket, nbucket;
	int in, known;
	char src[46]; /* its source (gx_pa_source): INET6_ADDRSTRLEN */
	char net[46]; /* "" or the /64 it counts in */
};

struct gx_pa {
	struct gx_pa_ent *oldest, *newest;
	struct gx_pa_ent **b, **nb_b;
	size_t nb, n, max, per_src, per_net;
	enum gx_pa_refusal refused; /* why the last gx_pa_admit said -EBUSY */
	unsigned char key[16];
};

/* per_net = per_src * GX_PA_NET_MULT */
int gx_pa_init(struct gx_pa *pa, size_t max, size_t per_src);
void gx_pa_free(struct gx_pa *pa);
int gx_pa_admit(struct gx_pa *pa, const char *src, int known, int full, struct gx_pa_ent **evict);
void gx_pa_add(struct gx_pa *pa, struct gx_pa_ent *e, const char *src, int known);
/* Removes e if it is in (authenticated or closed); accepts an entry not in. */
void gx_pa_del(struct gx_pa *pa, struct gx_pa_ent *e);
/* Entries of src's source; of its /64 (entries from outside the table). */
size_t gx_pa_count(const struct gx_pa *pa, const char *src);
size_t gx_pa_count_net(const struct gx_pa *pa, const char *src);
/* Why the last admit of src was refused, for a log line ("4 unauthenticated ones from
 * there", "64 from its /64", "the budget is full: ..."). */
const char *gx_pa_why(const struct gx_pa *pa, const char *src, char *buf, size_t len);
/* The source src counts as: src itself, or "fe80::/10" for an IPv6 link-local one. */
void gx_pa_source(const char *src, char *out, size_t len);
/* The IPv6 /64 src counts in ("2001:db8:1:2::/64"), or "" (IPv4, v4-mapped, loopback,
 * link-local: a source already). */
void gx_pa_net(const char *src, char *out, size_t len);
/* 1 for 127.0.0.0/8, ::1 and ::ffff:127.x.y.z. */
int gx_addr_is_loopback(const char *src);

/* ---- a set of addresses: the job table's (gx_guard.c) ------------------- */
/* Which sources are the job's peers: a budget's "known" (gx_pa_admit). Hashed as the budget
 * is (SipHash under a random key); at most cap addresses, never removed. */
struct gx_aset_ent {
	struct gx_aset_ent *next;
	char a[46];
};

struct gx_aset {
	struct gx_aset_ent **b;
	size_t nb, n, cap;
	unsigned char key[16];
};

int gx_aset_init(struct gx_aset *s, size_t cap);
void gx_aset_free(struct gx_aset *s);
/* 0 (added, or in already; "" is ignored), -ENOSPC at cap, -ENOMEM */
int gx_aset_add(struct gx_aset *s, const char *a);
int gx_aset_has(const struct gx_aset *s, const char *a);

/* ---- rate-limited warnings (gx_guard.c) --------------------------------- */
/*
 * For events anyone can cause (a stranger's connection, a bad proof): the
 * first GX_RL_FIRST are warnings, later ones go to -v only, and one summary
 * line per GX_RL_INTERVAL_MS counts them (printed at the next event, by
 * gx_rl_flush from a periodic timer, or by gx_rl_final). -q silences all of it.
 */
#define GX_RL_FIRST 3
#define GX_RL_INTERVAL_MS 10000

struct gx_rl {
	const char *what; /* "rdzv: unauthenticated connections refused" */
	uint64_t n, held;
	int64_t next_ms;
};

void gx_rl_log(struct gx_rl *rl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gx_rl_flush(struct gx_rl *rl);
/* The summary of what is still held, at the end of the service. */
void gx_rl_final(struct gx_rl *rl);

/* ---- validators: data from peers, files, env is hostile until checked --- */
/* DNS-1123 names: labels [a-z0-9-] (also upper case accepted), dots, <= 253. */
int gx_valid_hostname(const char *s);
/* Netdev names: 1..15 bytes, no '/', ':', whitespace or control, not "." / "..". */
int gx_valid_ifname(const char *s);
/* RDMA device names: 1..63 bytes of [A-Za-z0-9_.-]. */
int gx_valid_rdmadev(const char *s);
/* Job ids: 1..128 bytes of [A-Za-z0-9_.:-]. */
int gx_valid_jobid(const char *s);
/* Every byte printable ASCII, no quote, backslash, '$' or backtick. */
int gx_safe_text(const char *s, size_t maxlen);

/* ---- small string helpers ----------------------------------------------- */
/* Bounded copy that always terminates; -ENAMETOOLONG when truncated. */
int gx_strlcpy(char *dst, const char *src, size_t size);
/* Parse a base-10 integer in [min, max]; -EINVAL / -ERANGE. Whole string must match. */
int gx_parse_long(const char *s, long min, long max, long *out);
/* 1/true/yes -> 1, 0/false/no -> 0, else -EINVAL. */
int gx_parse_bool(const char *s, int *out);

#endif
