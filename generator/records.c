/* Graph records: each enumeration worker keeps its records in buckets by
 * the top bits of the fingerprint, each bucket a chain of blocks.  The
 * sorted whole is then assembled bucket by bucket (buckets are fingerprint
 * ranges, so sorting each in place sorts the whole), and each block is
 * freed as soon as it is copied: the records are held about once, never
 * twice, which is what bounds the memory of a four-op run. */
#include "gen_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Blocks of 1 MiB: large enough that the C library maps each one on its
 * own (and returns it when freed), small enough to waste little. */
#define BLOCK_RECORDS ((int64_t)((1 << 20) - 64) / (int64_t)sizeof(gen_record))

struct gen_record_block {
    struct gen_record_block *next;
    int64_t n;
    gen_record r[];
};

void gen_store_push(gen_record_store *s, uint64_t fp, gen_code code)
{
    int b = (int)(fp >> (64 - GEN_RECORD_BUCKET_BITS));
    gen_record_block *blk = s->head[b];
    if (!blk || blk->n == BLOCK_RECORDS) {
        blk = malloc(sizeof *blk + (size_t)BLOCK_RECORDS * sizeof(gen_record));
        if (!blk) {
            s->nomem = true;
            return;
        }
        blk->next = s->head[b];
        blk->n = 0;
        s->head[b] = blk;
    }
    blk->r[blk->n++] = gen_record_make(fp, code);
    s->count[b]++;
    s->total++;
}

void gen_store_free(gen_record_store *s)
{
    for (int b = 0; b < GEN_RECORD_BUCKETS; b++)
        while (s->head[b]) {
            gen_record_block *next = s->head[b]->next;
            free(s->head[b]);
            s->head[b] = next;
        }
}

static int cmp_record(const void *a, const void *b)
{
    const gen_record *x = a, *y = b;
    if (x->fp != y->fp)
        return x->fp < y->fp ? -1 : 1;
    gen_code cx = gen_record_code(x), cy = gen_record_code(y);
    return cx < cy ? -1 : cx > cy;
}

typedef struct assembly {
    gen_record_store *stores;
    int n_stores;
    gen_record *all;
    int64_t offset[GEN_RECORD_BUCKETS];
    atomic_int next;
} assembly;

static void *assemble_buckets(void *arg)
{
    assembly *a = arg;
    for (int b; (b = atomic_fetch_add(&a->next, 1)) < GEN_RECORD_BUCKETS;) {
        int64_t pos = a->offset[b];
        for (int s = 0; s < a->n_stores; s++) {
            gen_record_block **head = &a->stores[s].head[b];
            while (*head) {
                gen_record_block *blk = *head;
                memcpy(a->all + pos, blk->r, (size_t)blk->n * sizeof(gen_record));
                pos += blk->n;
                *head = blk->next;
                free(blk);
            }
        }
        qsort(a->all + a->offset[b], (size_t)(pos - a->offset[b]), sizeof(gen_record), cmp_record);
    }
    return NULL;
}

xf_status gen_store_assemble(gen_record_store *stores, int n_stores, int threads, gen_record **out, int64_t *n_out,
                             xf_error *err)
{
    assembly a = {.stores = stores, .n_stores = n_stores};
    atomic_init(&a.next, 0);
    int64_t total = 0;
    for (int b = 0; b < GEN_RECORD_BUCKETS; b++) {
        a.offset[b] = total;
        for (int s = 0; s < n_stores; s++)
            total += stores[s].count[b];
    }
    for (int s = 0; s < n_stores; s++)
        if (stores[s].nomem)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory while recording graphs");
    a.all = malloc((size_t)(total ? total : 1) * sizeof(gen_record));
    if (!a.all)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory (%lld graph records)", (long long)total);
    pthread_t tids[64];
    int started = 0;
    for (int t = 1; t < threads && started < 64; t++)
        if (pthread_create(&tids[started], NULL, assemble_buckets, &a) == 0)
            started++;
    assemble_buckets(&a);
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    *out = a.all;
    *n_out = total;
    return XF_OK;
}
