/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Carrying a profile's plan out: up, down, status, exec.  What `up` did is
 * recorded step by step in a state file, so `down` undoes exactly that,
 * after a crash too.
 */
#pragma once

#include <stdbool.h>

#include "profile.h"

struct cs_env_opts {
	const char *state_base; /* "/run/chroot-setup" */
	const char *fuse_qtfs;	/* the fuse-qtfs program (path or name in PATH) */
	const char *rexec;	/* the rexec program, for forwards */
};

/*
 * Make p->root canonical (realpath: no symlink in it), creating it first
 * when @create; 0 or -errno.  Every path up journals is under it.
 */
int cs_resolve_root(struct cs_profile *p, bool create);

/* Each returns the exit status, having printed what it did and one line per failure. */
int cs_up(const struct cs_profile *p, const struct cs_env_opts *o);
int cs_down(const char *name, const struct cs_env_opts *o);
int cs_status(const struct cs_profile *p, const struct cs_env_opts *o, bool json);
int cs_exec(const struct cs_profile *p, const struct cs_env_opts *o, char **argv);
