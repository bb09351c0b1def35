/* xflowc's symbolic dims (tools/xflowc_dims.c): the dims a file leaves
 * symbolic stay so in the written model where the optimized graph holds
 * at other sizes, the shape constants that depend on them written without
 * them or computed at run time. */
#ifndef XFLOWC_DIMS_H
#define XFLOWC_DIMS_H

#include "xf_optimizer.h"
#include "xf_proto.h"

/* While symbolic dims are worked out, an If whose condition folds stays:
 * the condition may depend on the sizes. */
extern const xf_canon_options xfc_keep_every_if;

/* What the symbolic dims need once the graph is canonicalized: the sizes
 * used to try it, and the folded constants that depend on them and must be
 * computed at run time in the written model. */
typedef struct xfc_sym_plan {
    bool distinct;
    xf_names recompute;
    char why[1200]; /* why the model cannot be written with its dims symbolic, once known */
    char fixed[1600]; /* the unknowns left fixed at their sizes so that the others hold, and why */
    /* the size guessed for the dims nothing sized (0: none), set by the
     * caller, and whether an unknown of that size is among those fixed */
    int64_t guess;
    bool fixed_guess;
} xfc_sym_plan;

/* Compares the canonicalized graph with the original canonicalized at two
 * other sizes: the shape constants that depend on the sizes are written
 * without them where they can be (before the search, which keeps them), the
 * others are listed to be computed at run time. */
void xfc_prepare_symbolic(xf_model *m, const xf_graph *original, int64_t opset, xfc_sym_plan *p);

/* The dims the file left symbolic (and no --input-shape fixed) stay
 * symbolic in the written model when the optimized graph, with the
 * constants that depend on them computed again, holds for other sizes.
 * Output dims that follow the sizes become symbolic too.  Where it holds
 * with one unknown fixed at its size, only that one is (p->fixed says
 * which).  Otherwise the model is written at the sizes used, and a warning
 * says why; but where the original does not run at those sizes (on
 * random inputs: unless inputs_given, the files' sizes being the user's),
 * false, with error saying so: such a file would take no input.  Where
 * dims nothing sized took a size guessed larger than 1 (p->guess), a dim
 * left fixed at it gives false too: a guess is no size to write (a batch
 * left at 1, as without guesses, is written). */
bool xfc_keep_symbolic(xf_model *m, const xf_graph *original, int64_t opset, uint64_t seed, xfc_sym_plan *p,
                       bool inputs_given, char *error, size_t error_n);

/* For an error in a model with symbolic dims: the sizes they were given,
 * which may not fit together (a KV cache's total = past + seq). */
const char *xfc_sizes_hint(const xf_model *m);

#endif
