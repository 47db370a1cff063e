/* bpfsys.h — the few bpf(2) commands a run needs to use the pinned BPF
 * sampler (bpfpin.c, bpfsample.c), as plain system calls: a run that finds
 * the sampler pinned maps none of libbpf, parses no BTF and runs no verifier.
 * Each returns what bpf(2) returns (an fd, 0, or -1 with errno). */
#ifndef JOBSCOPE_BPFSYS_H
#define JOBSCOPE_BPFSYS_H

#include <stdint.h>

int bpfsys_obj_get(const char *path);
int bpfsys_obj_pin(int fd, const char *path);
int bpfsys_map_create_array(const char *name, uint32_t value_size, uint32_t max_entries,
                            uint32_t flags);
int bpfsys_map_update(int fd, const void *key, const void *value, uint64_t flags);
int bpfsys_map_lookup(int fd, const void *key, void *value);
int bpfsys_map_delete(int fd, const void *key);
int bpfsys_map_next_key(int fd, const void *key, void *next);
/* Up to *count values from key 0 of an array into values; *count gets how
 * many came.  0, or -1 with errno (ENOENT: the end came first, *count set). */
int bpfsys_array_read(int fd, uint32_t *keys, void *values, uint32_t *count);
/* An iterator link of prog; cgroup_fd >= 0: a cgroup iterator over that
 * cgroup and its descendants (pre-order). */
int bpfsys_iter_link(int prog_fd, int cgroup_fd);
int bpfsys_iter_create(int link_fd);

#endif
