# tests/fuzz: libFuzzer targets for the parsers that read what a peer sends.
#
# Each target NAME is plain C, LLVMFuzzerTestOneInput() in
# tests/fuzz/fuzz-NAME.c, with a seed corpus in tests/fuzz/corpus/NAME.
# `make check` builds it with gcc (and, under --enable-sanitizers, ASan and
# UBSan) into tests/fuzz/replay-NAME, which replay.c drives over every seed
# once (tests/fuzz/test-corpus.sh); `make fuzz` builds the real libFuzzer
# binaries tests/fuzz/fuzz-NAME with clang, the code under test compiled
# from source with coverage.  Adding a target: its two programs here, its
# name in test-corpus.sh's list, and its seeds.

FUZZ_BINS =
FUZZ_CC = $(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -I$(top_srcdir)/lib -I$(top_builddir)

# The frame decoder, the reader getters and the handshakes (lib/wire.c, lib/auth.c).
check_PROGRAMS += tests/fuzz/replay-frame
tests_fuzz_replay_frame_SOURCES = tests/fuzz/fuzz-frame.c tests/fuzz/replay.c
tests_fuzz_replay_frame_LDADD = $(QT_LIBS)
FUZZ_BINS += tests/fuzz/fuzz-frame
FUZZ_FRAME_SRCS = $(top_srcdir)/tests/fuzz/fuzz-frame.c $(lib_libqt_a_SOURCES:%=$(top_srcdir)/%)
tests/fuzz/fuzz-frame: $(FUZZ_FRAME_SRCS)
	$(FUZZ_CC) $(GLIB_CFLAGS) $(URING_CFLAGS) `printf '%s\n' $(FUZZ_FRAME_SRCS) | grep '\.c$$'` $(GLIB_LIBS) $(URING_LIBS) -o $@

# The rexec message decoders (rexec/proto.c).
check_PROGRAMS += tests/fuzz/replay-rexec
tests_fuzz_replay_rexec_SOURCES = tests/fuzz/fuzz-rexec.c tests/fuzz/replay.c
tests_fuzz_replay_rexec_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/rexec
tests_fuzz_replay_rexec_LDADD = rexec/librexecproto.a $(QT_LIBS)
FUZZ_BINS += tests/fuzz/fuzz-rexec
FUZZ_REXEC_SRCS = $(top_srcdir)/tests/fuzz/fuzz-rexec.c $(top_srcdir)/rexec/proto.c \
	$(lib_libqt_a_SOURCES:%=$(top_srcdir)/%)
tests/fuzz/fuzz-rexec: $(FUZZ_REXEC_SRCS)
	$(FUZZ_CC) -I$(top_srcdir)/rexec $(GLIB_CFLAGS) $(URING_CFLAGS) `printf '%s\n' $(FUZZ_REXEC_SRCS) | grep '\.c$$'` \
		$(GLIB_LIBS) $(URING_LIBS) -o $@

# qtfs-server's request handling (fuse-qtfs/server.c): a server in the
# process, an authenticated and mounted client sending what the input says.
check_PROGRAMS += tests/fuzz/replay-qtfs-server
tests_fuzz_replay_qtfs_server_SOURCES = tests/fuzz/fuzz-qtfs-server.c tests/fuzz/fuzz-client.c \
	tests/fuzz/fuzz.h tests/fuzz/replay.c fuse-qtfs/server.c fuse-qtfs/dirwatch.c
tests_fuzz_replay_qtfs_server_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/fuse-qtfs
tests_fuzz_replay_qtfs_server_LDADD = fuse-qtfs/libqtfsproto.a fuse-qtfs/libqtfswl.a $(QT_LIBS)
FUZZ_BINS += tests/fuzz/fuzz-qtfs-server
FUZZ_QTFS_SERVER_SRCS = $(top_srcdir)/tests/fuzz/fuzz-qtfs-server.c $(top_srcdir)/tests/fuzz/fuzz-client.c \
	$(top_srcdir)/fuse-qtfs/server.c $(top_srcdir)/fuse-qtfs/dirwatch.c \
	$(fuse_qtfs_libqtfsproto_a_SOURCES:%=$(top_srcdir)/%) \
	$(fuse_qtfs_libqtfswl_a_SOURCES:%=$(top_srcdir)/%) \
	$(lib_libqt_a_SOURCES:%=$(top_srcdir)/%)
tests/fuzz/fuzz-qtfs-server: $(FUZZ_QTFS_SERVER_SRCS)
	$(FUZZ_CC) -I$(top_srcdir)/fuse-qtfs $(GLIB_CFLAGS) $(URING_CFLAGS) \
		`printf '%s\n' $(FUZZ_QTFS_SERVER_SRCS) | grep '\.c$$'` $(GLIB_LIBS) $(URING_LIBS) -o $@

# rexecd's sessions (rexecd/rexecd.c): a rexecd in the process, an
# authenticated client sending what the input says.
check_PROGRAMS += tests/fuzz/replay-rexecd
tests_fuzz_replay_rexecd_SOURCES = tests/fuzz/fuzz-rexecd.c tests/fuzz/fuzz-client.c \
	tests/fuzz/fuzz.h tests/fuzz/replay.c rexecd/rexecd.c
tests_fuzz_replay_rexecd_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/rexec -I$(top_srcdir)/rexecd
tests_fuzz_replay_rexecd_LDADD = rexec/librexecproto.a $(QT_LIBS)
FUZZ_BINS += tests/fuzz/fuzz-rexecd
FUZZ_REXECD_SRCS = $(top_srcdir)/tests/fuzz/fuzz-rexecd.c $(top_srcdir)/tests/fuzz/fuzz-client.c \
	$(top_srcdir)/rexecd/rexecd.c $(rexec_librexecproto_a_SOURCES:%=$(top_srcdir)/%) \
	$(lib_libqt_a_SOURCES:%=$(top_srcdir)/%)
tests/fuzz/fuzz-rexecd: $(FUZZ_REXECD_SRCS)
	$(FUZZ_CC) -I$(top_srcdir)/rexec -I$(top_srcdir)/rexecd $(GLIB_CFLAGS) $(URING_CFLAGS) \
		`printf '%s\n' $(FUZZ_REXECD_SRCS) | grep '\.c$$'` $(GLIB_LIBS) $(URING_LIBS) -o $@
# The Kubernetes watch stream parser, the reader of list answers and what
# reads the API's objects (autoscale/kube.c, autoscale/cluster-json.c),
# and the documents the autoscaler reads whole (snapshot, options,
# kubeconfig).
check_PROGRAMS += tests/fuzz/replay-kube
tests_fuzz_replay_kube_SOURCES = tests/fuzz/fuzz-kube.c tests/fuzz/fuzz.h tests/fuzz/replay.c
tests_fuzz_replay_kube_CPPFLAGS = $(ASD_CPPFLAGS)
tests_fuzz_replay_kube_LDADD = $(ASD_LIBS)
FUZZ_BINS += tests/fuzz/fuzz-kube
FUZZ_KUBE_SRCS = $(top_srcdir)/tests/fuzz/fuzz-kube.c \
	$(top_srcdir)/autoscale/kube.c $(top_srcdir)/autoscale/kube.h \
	$(autoscale_libasjson_a_SOURCES:%=$(top_srcdir)/%) \
	$(autoscale_core_libascore_a_SOURCES:%=$(top_srcdir)/%) \
	$(bm_libbm_a_SOURCES:%=$(top_srcdir)/%) $(lib_libqt_a_SOURCES:%=$(top_srcdir)/%)
tests/fuzz/fuzz-kube: $(FUZZ_KUBE_SRCS)
	$(FUZZ_CC) -I$(top_srcdir)/autoscale -I$(top_srcdir)/autoscale/core -I$(top_srcdir)/bm \
		$(GLIB_CFLAGS) $(URING_CFLAGS) $(JSONC_CFLAGS) $(CURL_CFLAGS) $(MHD_CFLAGS) \
		$(YAML_CFLAGS) $(SQLITE_CFLAGS) `printf '%s\n' $(FUZZ_KUBE_SRCS) | grep '\.c$$'` \
		$(CURL_LIBS) $(MHD_LIBS) $(YAML_LIBS) $(SQLITE_LIBS) $(JSONC_LIBS) $(GLIB_LIBS) \
		$(URING_LIBS) -lm -o $@

# The simulator's trace readers and native writers (sim/trace.c): every
# format sim_trace_reader_open/next reads, sim_trace_load and the openb node
# list, on the files capacity planners download.
check_PROGRAMS += tests/fuzz/replay-trace
tests_fuzz_replay_trace_SOURCES = tests/fuzz/fuzz-trace.c tests/fuzz/fuzz.h tests/fuzz/replay.c
tests_fuzz_replay_trace_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim $(GIO_CFLAGS)
tests_fuzz_replay_trace_LDADD = $(SIM_LIBS)
FUZZ_BINS += tests/fuzz/fuzz-trace
FUZZ_TRACE_SRCS = $(top_srcdir)/tests/fuzz/fuzz-trace.c $(sim_libsimtrace_a_SOURCES:%=$(top_srcdir)/%) \
	$(top_srcdir)/lib/json-keys.c $(top_srcdir)/lib/json-keys.h
tests/fuzz/fuzz-trace: $(FUZZ_TRACE_SRCS)
	$(FUZZ_CC) -I$(top_srcdir)/sim $(GIO_CFLAGS) $(JSONC_CFLAGS) `printf '%s\n' $(FUZZ_TRACE_SRCS) | grep '\.c$$'` $(GIO_LIBS) $(JSONC_LIBS) -lm -o $@
EXTRA_DIST += tests/fuzz/make-corpus-trace.sh

# BareMetalManager's readers of what a peer sends: the JSON parser, getters
# and ids (bm/json.c), bm-api's request bodies (bm/request.c) and the store
# taking them (bm/store.c), and the autoscaler's reader of bm-api's answers
# (autoscale/provider-yusur.c).
check_PROGRAMS += tests/fuzz/replay-bm
tests_fuzz_replay_bm_SOURCES = tests/fuzz/fuzz-bm.c tests/fuzz/fuzz.h tests/fuzz/replay.c
tests_fuzz_replay_bm_CPPFLAGS = $(ASD_CPPFLAGS) $(SQLITE_CFLAGS)
tests_fuzz_replay_bm_LDADD = $(ASD_LIBS)
FUZZ_BINS += tests/fuzz/fuzz-bm
FUZZ_BM_SRCS = $(top_srcdir)/tests/fuzz/fuzz-bm.c $(bm_libbm_a_SOURCES:%=$(top_srcdir)/%) \
	$(top_srcdir)/autoscale/provider-yusur.c $(autoscale_libasjson_a_SOURCES:%=$(top_srcdir)/%) \
	$(autoscale_core_libascore_a_SOURCES:%=$(top_srcdir)/%) $(lib_libqt_a_SOURCES:%=$(top_srcdir)/%)
tests/fuzz/fuzz-bm: $(FUZZ_BM_SRCS)
	$(FUZZ_CC) -I$(top_srcdir)/bm -I$(top_srcdir)/autoscale -I$(top_srcdir)/autoscale/core \
		$(GLIB_CFLAGS) $(URING_CFLAGS) $(JSONC_CFLAGS) $(SQLITE_CFLAGS) $(MHD_CFLAGS) $(CURL_CFLAGS) \
		`printf '%s\n' $(FUZZ_BM_SRCS) | grep '\.c$$'` \
		$(JSONC_LIBS) $(SQLITE_LIBS) $(MHD_LIBS) $(CURL_LIBS) $(GLIB_LIBS) $(URING_LIBS) -lm -o $@

# The host's policies on what the DPU may touch, against models of their
# documentation: qtfs-server's whitelist (fuse-qtfs/whitelist.c) and
# rexecd's environment policies (rexecd_env_filter).
check_PROGRAMS += tests/fuzz/replay-policy
tests_fuzz_replay_policy_SOURCES = tests/fuzz/fuzz-policy.c tests/fuzz/fuzz.h tests/fuzz/replay.c \
	rexecd/rexecd.c
tests_fuzz_replay_policy_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/fuse-qtfs -I$(top_srcdir)/rexec \
	-I$(top_srcdir)/rexecd
tests_fuzz_replay_policy_LDADD = fuse-qtfs/libqtfswl.a rexec/librexecproto.a $(QT_LIBS)
FUZZ_BINS += tests/fuzz/fuzz-policy
FUZZ_POLICY_SRCS = $(top_srcdir)/tests/fuzz/fuzz-policy.c $(top_srcdir)/rexecd/rexecd.c \
	$(fuse_qtfs_libqtfswl_a_SOURCES:%=$(top_srcdir)/%) \
	$(rexec_librexecproto_a_SOURCES:%=$(top_srcdir)/%) $(lib_libqt_a_SOURCES:%=$(top_srcdir)/%)
tests/fuzz/fuzz-policy: $(FUZZ_POLICY_SRCS)
	$(FUZZ_CC) -I$(top_srcdir)/fuse-qtfs -I$(top_srcdir)/rexec -I$(top_srcdir)/rexecd \
		$(GLIB_CFLAGS) $(URING_CFLAGS) `printf '%s\n' $(FUZZ_POLICY_SRCS) | grep '\.c$$'` \
		$(GLIB_LIBS) $(URING_LIBS) -o $@

TESTS += tests/fuzz/test-corpus.sh
EXTRA_DIST += tests/fuzz/test-corpus.sh tests/fuzz/make-corpus.sh tests/fuzz/make-corpus-rexec.py \
	tests/fuzz/make-corpus-qtfs-server.py tests/fuzz/make-corpus-policy.py tests/fuzz/corpus
CLEANFILES += $(FUZZ_BINS)

if HAVE_CLANG
fuzz: $(FUZZ_BINS)
	@for t in $(FUZZ_BINS); do \
		echo "run: $$t -max_total_time=60 $(top_srcdir)/tests/fuzz/corpus/$${t#tests/fuzz/fuzz-}"; \
	done
else
fuzz:
	@echo "make fuzz: clang not found; install the Debian package clang" >&2; exit 1
endif
