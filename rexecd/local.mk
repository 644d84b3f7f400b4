# SPDX-License-Identifier: Apache-2.0
#
# rexecd/: the host half of rexec, which runs whitelisted binaries for
# clients on the DPU.

sbin_PROGRAMS += rexecd/rexecd
rexecd_rexecd_SOURCES = rexecd/main.c
rexecd_rexecd_LDADD = $(QT_LIBS)
