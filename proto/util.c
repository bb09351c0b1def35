/* Small helpers used by import and export: arena, name map, pointer list,
 * error messages. */
#include "proto_internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ arena */

struct xfp_chunk {
    struct xfp_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

enum { ARENA_CHUNK = 64 * 1024 };

void *xfp_alloc(xfp_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    struct xfp_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->used = 0;
        c->cap = cap;
        /* A chunk made for one large request goes behind the current one so
         * that the current one's free space stays usable. */
        if (a->head && cap > ARENA_CHUNK) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *xfp_strdup(xfp_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = xfp_alloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void xfp_arena_free(xfp_arena *a)
{
    struct xfp_chunk *c = a->head;
    while (c) {
        struct xfp_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
}

/* ------------------------------------------------------------ name map */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t slot_of(const xfp_name_map *m, const char *key)
{
    size_t i = (size_t)hash_str(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static bool map_grow(xfp_name_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    const char **keys = calloc(cap, sizeof *keys);
    int *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return false;
    }
    xfp_name_map bigger = {cap, 0, keys, vals};
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t s = slot_of(&bigger, m->keys[i]);
            bigger.keys[s] = m->keys[i];
            bigger.vals[s] = m->vals[i];
            bigger.count++;
        }
    xfp_map_free(m);
    *m = bigger;
    return true;
}

bool xfp_map_put(xfp_name_map *m, const char *key, int val)
{
    if ((m->count + 1) * 2 > m->cap && !map_grow(m))
        return false;
    size_t s = slot_of(m, key);
    if (!m->keys[s]) {
        m->keys[s] = key;
        m->count++;
    }
    m->vals[s] = val;
    return true;
}

int xfp_map_get(const xfp_name_map *m, const char *key)
{
    if (!m->cap || !key)
        return -1;
    size_t s = slot_of(m, key);
    return m->keys[s] ? m->vals[s] : -1;
}

void xfp_map_free(xfp_name_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------ pointer list */

bool xfp_list_push(xfp_ptr_list *l, void *p)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        void **items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return false;
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = p;
    return true;
}

void xfp_list_free(xfp_ptr_list *l)
{
    free(l->items);
    memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------------ errors */

void xfp_error_one_line(xf_error *err)
{
    if (!err)
        return;
    for (char *p = err->msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
}

static bool default_domain(const char *d) { return !d || !d[0] || !strcmp(d, "ai.onnx"); }

bool xfp_same_domain(const char *a, const char *b)
{
    return default_domain(a) ? default_domain(b) : b && !strcmp(a, b);
}

int64_t xfp_model_opset(const Onnx__ModelProto *mp, const char *domain)
{
    for (size_t i = 0; i < mp->n_opset_import; i++)
        if (xfp_same_domain(mp->opset_import[i]->domain, domain))
            return mp->opset_import[i]->has_version ? mp->opset_import[i]->version : 0;
    return -1;
}
