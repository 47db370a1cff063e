/* bpfsys.c — see bpfsys.h. */
#include "bpfsys.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>

static int sys_bpf(int cmd, union bpf_attr *a)
{
    return (int)syscall(__NR_bpf, cmd, a, sizeof *a);
}

static uint64_t ptr(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

int bpfsys_obj_get(const char *path)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.pathname = ptr(path);
    return sys_bpf(BPF_OBJ_GET, &a);
}

int bpfsys_obj_pin(int fd, const char *path)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.pathname = ptr(path);
    a.bpf_fd = (uint32_t)fd;
    return sys_bpf(BPF_OBJ_PIN, &a);
}

int bpfsys_map_create_array(const char *name, uint32_t value_size, uint32_t max_entries,
                            uint32_t flags)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_type = BPF_MAP_TYPE_ARRAY;
    a.key_size = sizeof(uint32_t);
    a.value_size = value_size;
    a.max_entries = max_entries;
    a.map_flags = flags;
    strncpy(a.map_name, name, sizeof a.map_name - 1);
    return sys_bpf(BPF_MAP_CREATE, &a);
}

/* The element commands of a map: key, and value (for GET_NEXT_KEY the next
 * key: the same field of bpf_attr's union) as user pointers. */
static int map_elem(int cmd, int fd, const void *key, const void *value, uint64_t flags)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_fd = (uint32_t)fd;
    a.key = ptr(key);
    a.value = ptr(value);
    a.flags = flags;
    return sys_bpf(cmd, &a);
}

int bpfsys_map_update(int fd, const void *key, const void *value, uint64_t flags)
{
    return map_elem(BPF_MAP_UPDATE_ELEM, fd, key, value, flags);
}

int bpfsys_map_lookup(int fd, const void *key, void *value)
{
    return map_elem(BPF_MAP_LOOKUP_ELEM, fd, key, value, 0);
}

int bpfsys_map_delete(int fd, const void *key)
{
    return map_elem(BPF_MAP_DELETE_ELEM, fd, key, NULL, 0);
}

int bpfsys_map_next_key(int fd, const void *key, void *next)
{
    return map_elem(BPF_MAP_GET_NEXT_KEY, fd, key, next, 0);
}

int bpfsys_array_read(int fd, uint32_t *keys, void *values, uint32_t *count)
{
    union bpf_attr a;
    uint32_t out_batch = 0;
    memset(&a, 0, sizeof a);
    a.batch.map_fd = (uint32_t)fd;
    a.batch.in_batch = 0; /* from the start */
    a.batch.out_batch = ptr(&out_batch);
    a.batch.keys = ptr(keys);
    a.batch.values = ptr(values);
    a.batch.count = *count;
    int r = sys_bpf(BPF_MAP_LOOKUP_BATCH, &a);
    *count = a.batch.count;
    return r;
}

int bpfsys_iter_link(int prog_fd, int cgroup_fd)
{
    union bpf_iter_link_info li;
    union bpf_attr a;
    memset(&li, 0, sizeof li);
    memset(&a, 0, sizeof a);
    a.link_create.prog_fd = (uint32_t)prog_fd;
    a.link_create.attach_type = BPF_TRACE_ITER;
    if (cgroup_fd >= 0) {
        li.cgroup.cgroup_fd = (uint32_t)cgroup_fd;
        li.cgroup.order = BPF_CGROUP_ITER_DESCENDANTS_PRE;
        a.link_create.iter_info = ptr(&li);
        a.link_create.iter_info_len = sizeof li;
    }
    return sys_bpf(BPF_LINK_CREATE, &a);
}

int bpfsys_iter_create(int link_fd)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.iter_create.link_fd = (uint32_t)link_fd;
    return sys_bpf(BPF_ITER_CREATE, &a);
}
