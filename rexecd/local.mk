# SPDX-License-Identifier: Apache-2.0
#
# rexecd/: the host half of rexec, which runs whitelisted binaries for
# clients on the DPU and relays their unix-socket forwards.

sbin_PROGRAMS += rexecd/rexecd
rexecd_rexecd_SOURCES = rexecd/main.c rexecd/rexecd.c rexecd/rexecd.h
rexecd_rexecd_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/rexec
rexecd_rexecd_LDADD = rexec/librexecproto.a $(QT_LIBS)
dist_man_MANS += man/rexecd.8
EXTRA_DIST += rexecd/rexecd.conf.example
