# SPDX-License-Identifier: Apache-2.0
#
# chroot-setup/: builds and tears down the offload environment on the DPU
# from a profile.  profile.c (parsing and the step plan) is pure and has its
# own unit test.

noinst_LIBRARIES += chroot-setup/libcsprofile.a
chroot_setup_libcsprofile_a_SOURCES = chroot-setup/profile.c chroot-setup/profile.h

# env.c carries the plan out (mounts, shims, forwards, services, the state
# journal); supervise.c is the process that keeps a service or forward running.

sbin_PROGRAMS += chroot-setup/chroot-setup
chroot_setup_chroot_setup_SOURCES = chroot-setup/main.c chroot-setup/env.c chroot-setup/env.h \
	chroot-setup/supervise.c chroot-setup/supervise.h
chroot_setup_chroot_setup_LDADD = chroot-setup/libcsprofile.a $(QT_LIBS)
dist_doc_DATA += docs/chroot-setup.md docs/two-vm-guide.md
dist_man_MANS += man/chroot-setup.8

# The two example profiles (docs/chroot-setup.md); copy one to
# /etc/chroot-setup/profiles/ and adjust it.
csprofilesdir = $(docdir)/examples/chroot-setup
dist_csprofiles_DATA = chroot-setup/profiles/container-offload.conf \
	chroot-setup/profiles/libvirt-offload.conf
