/* What the canonicalization passes (canon.c) share with those in files of
 * their own (canon_pads.c). */
#ifndef XF_CANON_INTERNAL_H
#define XF_CANON_INTERNAL_H

#include "xf_core.h"

/* All nodes kept, for passes that then mark the ones they remove. */
bool *xf_canon_keep_all(const xf_graph *g);
/* Drops the unmarked nodes and every value nothing refers to any more (as
 * xf_graph_compact defines it), counting the initializers among them
 * except those in made[] (constants folding created and consumed itself,
 * which were never initializers of the model). */
void xf_canon_compact(xf_graph *g, const bool *keep, const bool *made, xf_canon_stats *st);

#endif
