# SPDX-License-Identifier: Apache-2.0
#
# chroot-setup/: builds and tears down the offload environment on the DPU
# from a profile.

sbin_PROGRAMS += chroot-setup/chroot-setup
chroot_setup_chroot_setup_SOURCES = chroot-setup/main.c
chroot_setup_chroot_setup_LDADD = $(QT_LIBS)
