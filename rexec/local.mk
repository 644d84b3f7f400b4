# SPDX-License-Identifier: Apache-2.0
#
# rexec/: the DPU half of rexec, which runs a command on the host as if it
# ran locally (also as a shim under the command's own name).  proto.c (the
# message codecs) and chan.c (fd <-> stream relays) are shared with rexecd.
# rexec-ssh is main.c again with --ssh compiled in: rexec hands --ssh over
# to it, so that plain rexec does not pay for loading libssh2 and libcrypto.

noinst_LIBRARIES += rexec/librexecproto.a
rexec_librexecproto_a_SOURCES = rexec/proto.c rexec/proto.h rexec/chan.c rexec/chan.h

REXEC_SOURCES = rexec/main.c rexec/client.c rexec/client.h rexec/forward.c \
	rexec/tty.c rexec/tty.h rexec/ssh-mode.h

bin_PROGRAMS += rexec/rexec
rexec_rexec_SOURCES = $(REXEC_SOURCES)
rexec_rexec_CPPFLAGS = $(AM_CPPFLAGS) -DLIBEXECDIR='"$(libexecdir)"'
if STATIC_REXEC
# Static (configure --enable-static-rexec, on by default where possible):
# half of rexec's start-up is the kernel mapping shared libraries.
rexec_rexec_LDFLAGS = $(AM_LDFLAGS) -static-pie
rexec_rexec_LDADD = rexec/librexecproto.a lib/libqt.a $(REXEC_STATIC_LIBS)
else
rexec_rexec_LDADD = rexec/librexecproto.a $(QT_LIBS)
endif

libexec_PROGRAMS += rexec/rexec-ssh
rexec_rexec_ssh_SOURCES = $(REXEC_SOURCES) rexec/ssh-mode.c
rexec_rexec_ssh_CPPFLAGS = $(AM_CPPFLAGS) -DREXEC_WITH_SSH -DLIBEXECDIR='"$(libexecdir)"'
rexec_rexec_ssh_LDADD = rexec/librexecproto.a $(QT_SSH_LIBS) $(QT_LIBS)
dist_man_MANS += man/rexec.1
dist_doc_DATA += docs/rexec.md
