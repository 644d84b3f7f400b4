// SPDX-License-Identifier: Apache-2.0
/*
 * rexec forward-unix: listen on a local unix socket and relay every
 * connection to a unix socket on the host through rexecd, one rexecd
 * connection per accepted connection (what udsproxyd does for qtfs, without
 * a kernel module or LD_PRELOAD).  Regular files passed with SCM_RIGHTS
 * travel as path, flags and offset (chan.c); other descriptors close the
 * relayed connection with an error in the log.
 *
 * A relayed connection ends when both directions have ended (each side's
 * EOF passed on as a half-close) and every byte sent either way has been
 * written out (rexec_chan_finished()), or when either side fails; we close
 * the rexecd connection then, and rexecd frees its half.  rexecd closes
 * it too once its side is finished, whichever comes first.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chan.h"
#include "client.h"
#include "conn.h"
#include "log.h"
#include "tty.h"

struct fwd {
	struct qt_loop *loop;
	const struct qt_endpoint *ep;
	const struct qt_psk *psk;
	int timeout_ms, peer_timeout_s;
	const char *local, *remote;
	GList *relays; /* struct relay* */
	unsigned n_conns;
	uint64_t serial;
};

struct relay {
	struct fwd *f;
	uint64_t id;
	int fd; /* until the chan owns it */
	struct qt_conn *conn;
	struct rexec_chan *ch;
};

static void relay_end(struct relay *r, int err, const char *why)
{
	if (r->conn)
		qt_conn_close(r->conn, err, why);
}

static void on_chan(struct rexec_chan *ch, enum rexec_chan_event ev, int err, void *user)
{
	struct relay *r = user;

	switch (ev) {
	case REXEC_CHAN_EV_READ_EOF:
	case REXEC_CHAN_EV_IN_DONE:
		break;
	case REXEC_CHAN_EV_WRITE_ERR:
		/* The local peer went away, or a passed file cannot be opened here. */
		qt_warn("forward #%" G_GUINT64_FORMAT ": cannot pass data on to the local peer: %s; "
			"closing the connection", r->id, g_strerror(-err));
		relay_end(r, err, "local write failed");
		return;
	case REXEC_CHAN_EV_REFUSED:
		qt_err("forward #%" G_GUINT64_FORMAT ": a descriptor that is not a regular file was "
		       "sent; only regular files can be forwarded; closing the connection", r->id);
		relay_end(r, err, "descriptor kind cannot be forwarded");
		return;
	}
	if (rexec_chan_finished(ch))
		relay_end(r, 0, "done");
}

static void on_forward_reply(struct qt_conn *c, int err, struct qt_msg *reply, void *arg)
{
	struct relay *r = arg;
	struct rexec_result_msg res = {0};

	if (err || rexec_result_decode(reply, &res) < 0) {
		qt_err("forward #%" G_GUINT64_FORMAT ": bad answer from %s: %s", r->id, r->f->ep->uri,
		       err ? g_strerror(-err) : "malformed");
		qt_msg_free(reply);
		relay_end(r, -EPROTO, "bad answer");
		return;
	}
	qt_msg_free(reply);
	if (res.result != REXEC_R_OK) {
		qt_err("forward #%" G_GUINT64_FORMAT ": %s", r->id, res.message);
		rexec_result_clear(&res);
		relay_end(r, -EPERM, "refused");
		return;
	}
	rexec_result_clear(&res);
	r->ch = rexec_chan_new(r->f->loop, c, r->fd, REXEC_UP, REXEC_DOWN, REXEC_CHAN_SOCK, on_chan, r);
	r->fd = -1;
}


static void relay_request(struct qt_conn *c, struct qt_msg *m, void *user)
{
	struct relay *r = user;
	int err;

	(void)c;
	if (!r->ch) {
		qt_msg_free(m);
		return;
	}
	err = rexec_chan_route(&r->ch, 1, m, true);
	if (err == 1) {
		qt_msg_free(m); /* nothing but stream messages on a forward */
	} else if (err < 0) {
		qt_err("forward #%" G_GUINT64_FORMAT ": rexecd sent more than its credit; "
		       "closing the connection", r->id);
		relay_end(r, -EPROTO, "flow control violated");
	} else if (rexec_chan_finished(r->ch)) {
		/* The last ACK came after both EOFs. */
		relay_end(r, 0, "done");
	}
}

static void relay_closed(struct qt_conn *c, int err, const char *reason, void *user)
{
	struct relay *r = user;

	(void)c;
	if (err && err != -EPERM && err != -EOPNOTSUPP)
		qt_warn("forward #%" G_GUINT64_FORMAT ": connection to %s closed: %s", r->id,
			r->f->ep->uri, reason);
	rexec_chan_free(r->ch);
	if (r->fd >= 0)
		close(r->fd);
	r->f->n_conns--;
	r->f->relays = g_list_remove(r->f->relays, r);
	qt_debug("forward #%" G_GUINT64_FORMAT ": closed", r->id);
	g_free(r);
}

static const struct qt_conn_ops relay_ops = {
	.request = relay_request,
	.closed = relay_closed,
};

static void on_accept(void *arg, int fd)
{
	struct fwd *f = arg;
	struct relay *r = g_new0(struct relay, 1);
	struct qt_msg *m;
	GList *link;
	struct qt_conn_opts co = {.role = QT_CONN_CLIENT, .psk = f->psk, .name = "rexec-forward",
				  .peer_timeout_s = f->peer_timeout_s};
	int err;

	r->f = f;
	r->id = ++f->serial;
	r->fd = fd;
	f->n_conns++;
	f->relays = link = g_list_prepend(f->relays, r);
	/*
	 * Connecting blocks the loop for one round trip to rexecd; a local
	 * client cannot make that longer than the connect timeout.
	 */
	if ((err = qt_conn_connect(f->loop, f->ep, f->timeout_ms, &co, &relay_ops, r, &r->conn)) < 0) {
		qt_err("forward #%" G_GUINT64_FORMAT ": cannot connect to %s: %s", r->id, f->ep->uri,
		       g_strerror(-err));
		close(fd);
		f->n_conns--;
		f->relays = g_list_delete_link(f->relays, link);
		g_free(r);
		return;
	}
	/* Sent right after our half of the handshake, without waiting for AUTH_OK. */
	m = rexec_forward_encode(f->remote);
	if (!m || qt_conn_call(r->conn, m, 0, on_forward_reply, r) < 0)
		relay_end(r, -EPROTO, "cannot send FORWARD");
	qt_debug("forward #%" G_GUINT64_FORMAT ": accepted", r->id);
}

static void on_signal(struct qt_watch *w, int fd, uint32_t revents, void *arg)
{
	struct fwd *f = arg;
	struct signalfd_siginfo si;

	(void)w;
	(void)revents;
	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		qt_notice("signal %s: stopping", strsignal((int)si.ssi_signo));
		qt_loop_stop(f->loop);
	}
}

int rexec_forward_run(const struct qt_endpoint *ep, const struct qt_psk *psk, int timeout_ms,
		      int peer_timeout_s, const char *local, const char *remote)
{
	struct fwd f = {.ep = ep, .psk = psk, .timeout_ms = timeout_ms,
			.peer_timeout_s = peer_timeout_s, .local = local, .remote = remote};
	g_autoptr(qt_loop) loop = NULL;
	g_autoptr(qt_endpoint) lep = NULL;
	g_autofree char *uri = g_strdup_printf("unix:%s", local), *msg = NULL;
	struct qt_listener *ls;
	struct qt_watch *sigw = NULL;
	struct stat made, now;
	bool named;
	sigset_t mask;
	int err, lfd, sfd;

	if (remote[0] != '/')
		return fprintf(stderr, "rexec: forward-unix: REMOTE_SOCKET must be an absolute path\n"),
		       REXEC_EXIT_USAGE;
	if (qt_endpoint_parse(uri, &lep, &msg) < 0) {
		fprintf(stderr, "rexec: forward-unix: %s\n", msg);
		return REXEC_EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if ((err = qt_loop_new(QT_LOOP_AUTO, &loop)) < 0) {
		fprintf(stderr, "rexec: cannot start the event loop: %s\n", g_strerror(-err));
		return REXEC_EXIT_CONN;
	}
	f.loop = loop;
	if ((err = qt_endpoint_listen(lep, 128, &lfd)) < 0) {
		fprintf(stderr, "rexec: forward-unix: cannot listen on %s: %s\n", local,
			g_strerror(-err));
		return REXEC_EXIT_SETUP;
	}
	/* The socket's file, to remove on the way out only if it is still ours. */
	named = local[0] != '@' && stat(local, &made) == 0;
	ls = qt_listener_add(loop, lfd, on_accept, &f);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd >= 0)
		sigw = qt_watch_add(loop, sfd, QT_EV_IN, on_signal, &f);
	qt_notice("forwarding %s to %s on %s", local, remote, ep->uri);
	err = qt_loop_run(loop);
	qt_listener_remove(ls);
	if (named && stat(local, &now) == 0 && now.st_dev == made.st_dev &&
	    now.st_ino == made.st_ino)
		unlink(local);
	qt_watch_remove(sigw);
	if (sfd >= 0)
		close(sfd);
	/* Close what is still relayed, and let the close callbacks free it. */
	for (GList *i = f.relays; i; i = i->next)
		relay_end(i->data, 0, "shutting down");
	for (int i = 0; i < 200 && f.n_conns; i++)
		qt_loop_run_once(loop, 10);
	if (err < 0) {
		fprintf(stderr, "rexec: event loop failed: %s\n", g_strerror(-err));
		return REXEC_EXIT_CONN;
	}
	return 0;
}
