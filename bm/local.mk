# SPDX-License-Identifier: Apache-2.0
#
# bm/: BareMetalManager.  bm-api (REST service and database), bm-controller
# (lifecycle reconciler), bm-handler (one per DPU) and the bmctl client.

sbin_PROGRAMS += bm/bm-api bm/bm-controller bm/bm-handler
bm_bm_api_SOURCES = bm/bm-api.c
bm_bm_api_LDADD = $(QT_LIBS)
bm_bm_controller_SOURCES = bm/bm-controller.c
bm_bm_controller_LDADD = $(QT_LIBS)
bm_bm_handler_SOURCES = bm/bm-handler.c
bm_bm_handler_LDADD = $(QT_LIBS)

bin_PROGRAMS += bm/bmctl
bm_bmctl_SOURCES = bm/bmctl.c
bm_bmctl_LDADD = $(QT_LIBS)
