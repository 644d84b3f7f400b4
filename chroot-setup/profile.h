/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Offload-environment profiles: what chroot-setup builds, parsed from a
 * GKeyFile (format in docs/chroot-setup.md) into a plan of steps in the
 * order `up` runs them and `down` undoes them.  Pure: no I/O beyond the
 * text given, no globals; cs_profile_check_host() is the one function that
 * looks at the machine (paths, key files), for `chroot-setup check`.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>

enum cs_step_kind {
	CS_ROOT_BIND,	/* bind root_from onto the root (optional) */
	CS_BIND,	/* bind a local directory into the root */
	CS_PSEUDO,	/* a local pseudo file system (proc, sysfs, tmpfs...) */
	CS_QTFS,	/* a fuse-qtfs mount of a host path */
	CS_SHIM,	/* a rexec shim inside the root */
	CS_FORWARD,	/* a unix-socket forward (rexec forward-unix) */
	CS_SERVICE,	/* a process started inside the root */
};

enum cs_restart {
	CS_RESTART_NO,
	CS_RESTART_ON_FAILURE,
	CS_RESTART_ALWAYS,
};

struct cs_step {
	enum cs_step_kind kind;
	char *section;	/* the profile group it came from, for messages */
	char *target;	/* absolute, inside the root (shims: the link's path) */
	char *source;	/* BIND: local dir; QTFS: host path; FORWARD: host socket; SHIM: host binary */
	char *fstype;	/* PSEUDO: proc, sysfs, devtmpfs, tmpfs, mqueue, cgroup2, devbind */
	char *options;	/* PSEUDO: mount data; QTFS: extra -o options */
	bool ro;
	bool proc;	/* QTFS: proc mode */
	char *server;	/* QTFS: URI; FORWARD/SHIM: rexecd URI */
	char *key_file;
	char **argv;	/* SERVICE */
	enum cs_restart restart;	/* SERVICE; forwards always restart */
	char *ready;		/* SERVICE: absolute path inside the root that means "ready" */
	unsigned ready_timeout;	/* SERVICE: seconds `up` waits for it (or for a first crash) */
	unsigned stop_timeout;	/* SERVICE: seconds between SIGTERM and SIGKILL on `down` */
};

struct cs_profile {
	char *name;
	char *path;	 /* where it was read from, for messages */
	char *root;	 /* absolute */
	char *root_from; /* NULL, or a directory bound onto the root first */
	bool pivot_root;
	char *qtfs_server, *qtfs_key_file;   /* defaults for [qtfs:...] */
	char *rexec_host, *rexec_key_file;   /* defaults for shims and forwards */
	char *rexec_binary;		     /* the rexec the shims link to, inside the root */
	char **env;			     /* "NAME=VALUE" for exec and services */
	GPtrArray *steps;		     /* struct cs_step*, in `up` order */
};

/*
 * Can @name be a profile's name, that is the one file name its state
 * directory, lock and logs are made of: 1 to CS_NAME_MAX bytes of UTF-8,
 * not "." or "..", no "/" and no control characters.
 */
#define CS_NAME_MAX 200
#define CS_NAME_RULE "a name is one file name: not . or .., no /, no control characters"
bool cs_profile_name_ok(const char *name);

/*
 * Parse @data (the profile file's text; @path for messages, @name when
 * the profile has no name= of its own).  0 and *out, or -EINVAL with a
 * one-line *msg naming the file, the group and the key.
 */
int cs_profile_parse(const char *path, const char *name, const char *data,
		     struct cs_profile **out, char **msg);
/* Find PROFILE (a path, or a name in @dir) and parse it. */
int cs_profile_load(const char *profile, const char *dir, struct cs_profile **out, char **msg);
/*
 * Only the name of PROFILE, for down, whatever the rest of it says now:
 * name= of [profile] (even in a file that no longer parses), else the
 * file name; a PROFILE without "/" whose file is gone is taken for the
 * name itself (the state directory's).  0 and *name, or -errno and *msg.
 */
int cs_profile_name_of(const char *profile, const char *dir, char **name, char **msg);
void cs_profile_free(struct cs_profile *p);
typedef struct cs_profile cs_profile;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(cs_profile, cs_profile_free)

/* One line describing @s ("qtfs  host:/proc -> /srv/root/proc (proc mode)"). */
char *cs_step_describe(const struct cs_profile *p, const struct cs_step *s);
/* The path of @s's target on the DPU (root + target). */
char *cs_step_host_path(const struct cs_profile *p, const struct cs_step *s);

/*
 * What can be checked without changing anything: the root and bind sources
 * exist and are directories, key files load, URIs parse, shims' rexec
 * binary exists in the root.  Appends one line per problem to @problems;
 * returns their number.
 */
unsigned cs_profile_check_host(const struct cs_profile *p, GPtrArray *problems);
