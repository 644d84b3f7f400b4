# SPDX-License-Identifier: Apache-2.0
#
# sim/: the discrete-event capacity simulator; it will link the autoscaler
# core from autoscale/core/.

bin_PROGRAMS += sim/sim
sim_sim_SOURCES = sim/main.c
sim_sim_LDADD = $(QT_LIBS)
