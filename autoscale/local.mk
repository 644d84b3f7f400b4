# SPDX-License-Identifier: Apache-2.0
#
# autoscale/: the Cluster Autoscaler.  `autoscale once` runs the core on a
# snapshot; `autoscale run` is the live daemon.  The core will live in
# autoscale/core/ as a convenience library that sim links too.

bin_PROGRAMS += autoscale/autoscale
autoscale_autoscale_SOURCES = autoscale/main.c
autoscale_autoscale_LDADD = $(QT_LIBS)
