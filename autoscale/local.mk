# SPDX-License-Identifier: Apache-2.0
#
# autoscale/: the Cluster Autoscaler.  `autoscale once` runs the core on a
# snapshot; `autoscale run` is the live daemon (issue 9).
#
# autoscale/core/ is the pure decision core (no I/O, no globals, no clock),
# a convenience library that the simulator links too.  The JSON snapshot
# reader and the decision writer sit beside main.c, outside the core,
# because they deal with files and json-c.

noinst_LIBRARIES += autoscale/core/libascore.a
autoscale_core_libascore_a_SOURCES = \
	autoscale/core/model.c autoscale/core/model.h \
	autoscale/core/units.c autoscale/core/units.h \
	autoscale/core/options.c autoscale/core/options.h \
	autoscale/core/predicates.c autoscale/core/predicates.h \
	autoscale/core/snapshot.c autoscale/core/snapshot.h \
	autoscale/core/estimator.c autoscale/core/estimator.h \
	autoscale/core/expander.c autoscale/core/expander.h \
	autoscale/core/drain.c autoscale/core/drain.h \
	autoscale/core/autoscaler.c autoscale/core/autoscaler.h \
	autoscale/core/provider.c autoscale/core/provider.h

ASCORE_LIBS = autoscale/core/libascore.a $(GLIB_LIBS) -lm

# Snapshot JSON in, decision JSON out; sim can link it to read the same files.
noinst_LIBRARIES += autoscale/libasjson.a
autoscale_libasjson_a_SOURCES = autoscale/cluster-json.c autoscale/cluster-json.h
autoscale_libasjson_a_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/autoscale/core $(JSONC_CFLAGS)

ASJSON_LIBS = autoscale/libasjson.a $(JSONC_LIBS)

# The daemon's pieces: Kubernetes client, yusur provider, the loop.  A
# library so that the unit tests link the same objects.
noinst_LIBRARIES += autoscale/libasd.a
autoscale_libasd_a_SOURCES = \
	autoscale/kube.c autoscale/kube.h \
	autoscale/provider-yusur.c autoscale/provider-yusur.h \
	autoscale/daemon.c autoscale/daemon.h
ASD_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/autoscale/core -I$(top_srcdir)/autoscale \
	-I$(top_srcdir)/bm $(JSONC_CFLAGS) $(CURL_CFLAGS) $(MHD_CFLAGS) $(YAML_CFLAGS)
autoscale_libasd_a_CPPFLAGS = $(ASD_CPPFLAGS)

ASD_LIBS = autoscale/libasd.a bm/libbm.a $(ASJSON_LIBS) $(ASCORE_LIBS) $(QT_LIBS) \
	$(CURL_LIBS) $(MHD_LIBS) $(YAML_LIBS) $(SQLITE_LIBS) $(JSONC_LIBS)

bin_PROGRAMS += autoscale/autoscale
autoscale_autoscale_SOURCES = autoscale/main.c
autoscale_autoscale_CPPFLAGS = $(ASD_CPPFLAGS)
autoscale_autoscale_LDADD = $(ASD_LIBS)
dist_doc_DATA += docs/autoscale-snapshot.md docs/autoscale.md
dist_man_MANS += man/autoscale.1
# Deployment examples (not installed): Kubernetes manifests.
EXTRA_DIST += contrib/kubernetes/rbac.yaml \
	contrib/kubernetes/deployment.yaml
