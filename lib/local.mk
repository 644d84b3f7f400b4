# lib/: code that two or more programs share.  libqt is the transport stack
# (wire codec, endpoints, event loop, connections, PSK auth) plus config and
# logging; it depends only on GLib and liburing.

noinst_LIBRARIES += lib/libqt.a

lib_libqt_a_SOURCES = \
	lib/wire.c lib/wire.h \
	lib/log.c lib/log.h \
	lib/conf.c lib/conf.h \
	lib/cli.c lib/cli.h \
	lib/endpoint.c lib/endpoint.h \
	lib/auth.c lib/auth.h \
	lib/loop.c lib/loop.h lib/loop-private.h lib/loop-uring.c lib/loop-epoll.c \
	lib/conn.c lib/conn.h \
	lib/pipe.c \
	lib/mountinfo.c lib/mountinfo.h \
	lib/json-str.c lib/json-str.h \
	lib/json-keys.c lib/json-keys.h \
	lib/qtfs-sync.c lib/qtfs-sync.h
lib_libqt_a_CPPFLAGS = $(AM_CPPFLAGS) $(URING_CFLAGS)

QT_LIBS = lib/libqt.a $(URING_LIBS) $(GLIB_LIBS)

# libqtssh: the SSH transport (lib/ssh.h), apart from libqt so that only the
# programs that speak SSH link libssh2.  It uses libqt (endpoints, logging):
# link $(QT_SSH_LIBS) before $(QT_LIBS).
noinst_LIBRARIES += lib/libqtssh.a

lib_libqtssh_a_SOURCES = \
	lib/ssh.c lib/ssh.h \
	lib/ssh-knownhosts.c lib/ssh-knownhosts.h
lib_libqtssh_a_CPPFLAGS = $(AM_CPPFLAGS) $(SSH2_CFLAGS)

QT_SSH_LIBS = lib/libqtssh.a $(SSH2_LIBS)
