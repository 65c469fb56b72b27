/* SPDX-License-Identifier: MIT */
/*
 * rsh_int.h - remote exec for MPI launchers (no sshd, kubectl or RBAC): `gxboot serve` /
 * `--serve` answers on the secondary address (port --port + 2), `gxboot rsh`
 * is the ssh-like client mpirun calls, `gxboot hosts` prints host:slots.
 * The wire (rdzv/PROTOCOL.md "Remote exec"): a clear mutual handshake over a
 * key derived from the token for "rsh:<job id>" (rsh.key, never the token),
 * then libsodium secretstream frames both ways.
 */
#ifndef AGENT_RSH_INT_H
#define AGENT_RSH_INT_H

#include "agent/agent.h"
#include "agent/remote/remote.h"
#include "rdzv/gx/gx.h"

#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RSH_NONCE_LEN 32
#define RSH_MAGIC "GXRSH1\n"		  /* 8 bytes with its NUL */
#define RSH_HELLO_LEN (8 + RSH_NONCE_LEN) /* magic + nonce, both ways */
#define RSH_HDR_LEN crypto_secretstream_xchacha20poly1305_HEADERBYTES
#define RSH_AUTH_LEN (32 + RSH_HDR_LEN)	      /* client proof + its stream header */
#define RSH_ACCEPT_LEN (1 + 32 + RSH_HDR_LEN) /* 0 + server proof + header; 1 = refused */
#define RSH_MAX_PLAIN 65536		      /* one frame: type byte + payload */
#define RSH_MAX_CT (RSH_MAX_PLAIN + crypto_secretstream_xchacha20poly1305_ABYTES)
#define RSH_MAX_CMD 60000      /* the joined command line */
#define RSH_CHUNK 32768	       /* stdin / stdout / stderr read size */
#define RSH_OUT_HIGH 262144    /* queued bytes above which a producer pauses */
#define RSH_MAX_SESSIONS 64    /* commands running at once */
#define RSH_MAX_CONNS 128      /* connections, handshakes included */
#define RSH_HANDSHAKE_MS 10000 /* accept -> EXEC */
#define RSH_PROOF_MS 3000      /* accept -> the client's proof: a stranger's time */
#define RSH_PREAUTH_PER_SRC 4  /* unauthenticated connections per address */
#define RSH_EVICT_PER_EVENT 4  /* oldest unauthenticated ones closed per accept turn */
#define RSH_LEARNED 16	       /* addresses outside the table that proved the key, kept */
#define RSH_UNKNOWN_POOL 8     /* unauthenticated ones from the rest, all together */
#define RSH_KILL_GRACE_MS 2000 /* SIGTERM -> SIGKILL of a session's group */
#define RSH_CONNECT_MS 10000   /* client: connect + handshake */

enum rsh_type {
	RSH_EXEC = 1,	   /* C->S: the command line (no NUL) */
	RSH_STDIN = 2,	   /* C->S: bytes */
	RSH_STDIN_EOF = 3, /* C->S */
	RSH_SIGNAL = 4,	   /* C->S: one byte, the signal number */
	RSH_STDOUT = 5,	   /* S->C: bytes */
	RSH_STDERR = 6,	   /* S->C: bytes */
	RSH_EXIT = 7,	   /* S->C: kind (0 exited, 1 signal), value */
	RSH_ERROR = 8,	   /* S->C: one line; the session ends (exit 255) */
};

/* ---- credential (rsh.key: "key=<64 hex>\nport=<n>\n", 0600) ---------------- */
struct rsh_key {
	unsigned char k[RSH_KEY_LEN];
	long port; /* the serve port of this job */
};
int agent_rsh_key_load(const char *path, struct rsh_key *key, char *err, size_t errlen);

/* ssh's joining: the words with one space between them, no quoting (the
 * remote /bin/sh -c splits them again). -E2BIG past RSH_MAX_CMD. */
int agent_rsh_join_args(char *const *argv, int argc, char **out);

/* Proofs and the two stream keys, from the key and both nonces. */
void agent_rsh_proof(const unsigned char k[RSH_KEY_LEN], char who,
		     const unsigned char nc[RSH_NONCE_LEN], const unsigned char ns[RSH_NONCE_LEN],
		     unsigned char out[32]);
void agent_rsh_stream_keys(const unsigned char k[RSH_KEY_LEN],
			   const unsigned char nc[RSH_NONCE_LEN],
			   const unsigned char ns[RSH_NONCE_LEN], unsigned char c2s[32],
			   unsigned char s2c[32]);

/* ---- a non-blocking connection: raw handshake bytes, then sealed frames ---- */
/*
 * A gx_frame on the remote-exec wire: the clear handshake as raw bytes of fixed size, then
 * frames of a 4-byte length (bounded to 18 .. RSH_MAX_CT before a body byte is read) and
 * the secretstream ciphertext of type | payload. Sending seals through gx_frame's seal hook
 * (the push stream, straight into the output queue); a frame read comes whole and the pull
 * stream opens it into the caller's buffer (it cannot decrypt in place: the type byte
 * shifts the payload by one). Reads never go past the current frame: what the peer sends
 * next stays in the socket, which is the backpressure on a client's stdin.
 */
#define RSH_FRAMES_PER_EVENT 4 /* frames read per readiness: the loop serves the rest between */
struct rsh_conn {
	struct gx_frame f; /* f.fd the socket, f.eof once the peer closed */
	int sealed;	   /* 1: push stream up, 2: pull too */
	crypto_secretstream_xchacha20poly1305_state tx, rx;
};
void agent_rsh_conn_init(struct rsh_conn *c, int fd);
void agent_rsh_conn_free(struct rsh_conn *c); /* closes fd */
/* Raw handshake bytes: 1 and n bytes in out (the same n each call until then), 0 not yet,
 * -ECONNRESET at EOF, -errno. */
int agent_rsh_conn_take(struct rsh_conn *c, void *out, size_t n);
/* Raw handshake bytes: written as far as the socket takes them, the rest queued. */
int agent_rsh_conn_put(struct rsh_conn *c, const void *p, size_t n);
/* The two streams: ours (its header to send into txhdr), the peer's (from rxhdr). */
int agent_rsh_conn_push_init(struct rsh_conn *c, const unsigned char key[32],
			     unsigned char txhdr[RSH_HDR_LEN]);
int agent_rsh_conn_pull_init(struct rsh_conn *c, const unsigned char key[32],
			     const unsigned char rxhdr[RSH_HDR_LEN]);
/* One frame: 1 (type, payload in buf[RSH_MAX_PLAIN], len), 0 not yet (or the peer's stream
 * is not up), GX_EMAC / GX_EPROTO, -ECONNRESET at EOF, -errno. */
int agent_rsh_conn_next(struct rsh_conn *c, uint8_t *type, unsigned char *buf, size_t *len);
int agent_rsh_conn_send(struct rsh_conn *c, uint8_t type, const void *p, size_t len);
/* 0 all written, 1 some left, -errno. */
int agent_rsh_conn_flush(struct rsh_conn *c);
static inline size_t rsh_conn_queued(const struct rsh_conn *c)
{
	return gx_frame_pending(&c->f);
}

#endif
