/* kssum.c — the sha256 kickstart writes for each -s file (Pegasus' integrity
 * checking compares it with the replica catalog's).
 *
 * OpenSSL's libcrypto does the hashing; it is loaded with dlopen only when
 * a -s file is checksummed, so that the monitor maps no TLS library for
 * every other job (as the network plugin, docs/hacking.md).  Without it
 * the record says integrity_error, as kickstart's does when its checksum
 * fails. */
#include "kickstart.h"
#include "../util/clock.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

typedef struct crypto {
    void *(*md_ctx_new)(void);
    void (*md_ctx_free)(void *);
    const void *(*sha256)(void);
    int (*init)(void *, const void *, void *);
    int (*update)(void *, const void *, size_t);
    int (*final)(void *, unsigned char *, unsigned int *);
} crypto;

static int crypto_load(crypto *c)
{
    static const char *const libs[] = {"libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so"};
    void *h = NULL;
    for (size_t i = 0; !h && i < sizeof libs / sizeof libs[0]; i++)
        h = dlopen(libs[i], RTLD_LAZY | RTLD_LOCAL);
    if (!h) return -1;
    *(void **)&c->md_ctx_new = dlsym(h, "EVP_MD_CTX_new");
    *(void **)&c->md_ctx_free = dlsym(h, "EVP_MD_CTX_free");
    *(void **)&c->sha256 = dlsym(h, "EVP_sha256");
    *(void **)&c->init = dlsym(h, "EVP_DigestInit_ex");
    *(void **)&c->update = dlsym(h, "EVP_DigestUpdate");
    *(void **)&c->final = dlsym(h, "EVP_DigestFinal_ex");
    return c->md_ctx_new && c->md_ctx_free && c->sha256 && c->init && c->update && c->final ? 0
                                                                                            : -1;
}

static int hash_fd(const crypto *c, int fd, unsigned char md[32])
{
    void *ctx = c->md_ctx_new();
    if (!ctx) return -1;
    int ok = c->init(ctx, c->sha256(), NULL);
    char buf[65536];
    ssize_t n;
    while (ok && (n = read(fd, buf, sizeof buf)) > 0) ok = c->update(ctx, buf, (size_t)n);
    unsigned int len = 0;
    ok = ok && n == 0 && c->final(ctx, md, &len) && len == 32;
    c->md_ctx_free(ctx);
    return ok ? 0 : -1;
}

int kssum_sha256(const char *path, char hex[65], double *seconds)
{
    double t0 = now_epoch();
    crypto c;
    if (crypto_load(&c) != 0) return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    unsigned char md[32];
    int rc = hash_fd(&c, fd, md);
    close(fd);
    if (rc != 0) return -1;
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    *seconds = now_epoch() - t0;
    return 0;
}
