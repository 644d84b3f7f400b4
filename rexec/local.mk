# SPDX-License-Identifier: Apache-2.0
#
# rexec/: the DPU half of rexec, which runs a command on the host as if it
# ran locally (also as a shim under the command's own name).

bin_PROGRAMS += rexec/rexec
rexec_rexec_SOURCES = rexec/main.c
rexec_rexec_LDADD = $(QT_LIBS)
