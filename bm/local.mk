# SPDX-License-Identifier: Apache-2.0
#
# bm/: BareMetalManager.  bm-api (REST service and database), bm-controller
# (lifecycle reconciler), bm-handler (one per DPU) and the bmctl client.
# libbm holds what they share: the lifecycle (pure), JSON helpers, the
# checks of bm-api's request bodies, the handler API as the handler and the
# controller read it, the SQLite store and the HTTP server/client.

noinst_LIBRARIES += bm/libbm.a
bm_libbm_a_SOURCES = \
	bm/lifecycle.c bm/lifecycle.h \
	bm/json.c bm/json.h \
	bm/request.c bm/request.h \
	bm/handler-proto.c bm/handler-proto.h \
	bm/store.c bm/store.h \
	bm/httpd.c bm/httpd.h
bm_libbm_a_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS) $(SQLITE_CFLAGS) $(MHD_CFLAGS) $(CURL_CFLAGS)

BM_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS) $(SQLITE_CFLAGS) $(MHD_CFLAGS) $(CURL_CFLAGS)
BM_LIBS = bm/libbm.a $(QT_LIBS) $(JSONC_LIBS) $(SQLITE_LIBS) $(MHD_LIBS) $(CURL_LIBS)

sbin_PROGRAMS += bm/bm-api bm/bm-controller bm/bm-handler
bm_bm_api_SOURCES = bm/bm-api.c
bm_bm_api_CPPFLAGS = $(BM_CPPFLAGS)
bm_bm_api_LDADD = $(BM_LIBS)
bm_bm_controller_SOURCES = bm/bm-controller.c
bm_bm_controller_CPPFLAGS = $(BM_CPPFLAGS)
bm_bm_controller_LDADD = $(BM_LIBS)
bm_bm_handler_SOURCES = bm/bm-handler.c
bm_bm_handler_CPPFLAGS = $(BM_CPPFLAGS)
bm_bm_handler_LDADD = $(BM_LIBS)

bin_PROGRAMS += bm/bmctl
bm_bmctl_SOURCES = bm/bmctl.c
bm_bmctl_CPPFLAGS = $(BM_CPPFLAGS)
bm_bmctl_LDADD = $(BM_LIBS)

# The exec driver's example command (docs/bm.md), installed with the docs.
bmexampledir = $(docdir)/examples
dist_bmexample_SCRIPTS = bm/examples/bm-exec-example.py

dist_man_MANS += man/bm-api.8 man/bm-controller.8 man/bm-handler.8 man/bmctl.1
dist_doc_DATA += docs/bm.md
